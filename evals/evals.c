/* The eval table; see evals.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/evals.h"

#include <string.h>

#include "evals/gsm8k_acceptance.h"
#include "evals/gsm8k_compare.h"
#include "evals/gsm8k_eval.h"
#include "evals/mrcr_eval.h"
#include "evals/ruler_eval.h"
#include "util/msg.h"

const struct dsa_eval dsa_evals[] = {
    /* name, title, inprocess, compare_identity, identity_gates, compare_acceptance, hooks */
    {"gsm8k", "GSM8K", true, dsa_gsm8k_compare_identity, true, dsa_gsm8k_acceptance,
     &dsa_gsm8k_hooks},
    {"mrcr", "MRCR", true, NULL, false, NULL, &dsa_mrcr_hooks},
    {"ruler", "RULER", true, NULL, false, NULL, &dsa_ruler_hooks},
    {NULL, NULL, false, NULL, false, NULL, NULL},
};

bool dsa_eval_run_stopper(const struct dsa_result *r)
{
    return r->status == DSA_RES_FAILED &&
           (r->unreachable || r->http_code == 401 || r->http_code == 403);
}

bool dsa_eval_run_bad_input(const struct dsa_result *r)
{
    return r->status == DSA_RES_FAILED && r->error && !strcmp(r->error, DSA_INPROC_BAD_TRACE);
}

const struct dsa_eval *dsa_eval_find(const char *name)
{
    for (const struct dsa_eval *e = dsa_evals; name && e->name; e++)
        if (!strcmp(e->name, name))
            return e;
    return NULL;
}

dsa_cmp_identity_fn dsa_eval_identity_for(const char *name)
{
    const struct dsa_eval *e = dsa_eval_find(name);
    return e ? e->compare_identity : NULL;
}

dsa_cmp_acceptance_fn dsa_eval_acceptance_for(const char *name)
{
    if (!name)
        return dsa_gsm8k_acceptance;
    const struct dsa_eval *e = dsa_eval_find(name);
    return e ? e->compare_acceptance : NULL;
}

void dsa_eval_cmp_hooks(struct dsa_cmp_opts *o)
{
    o->identity_for = dsa_eval_identity_for;
    o->acceptance_for = dsa_eval_acceptance_for;
}

int dsa_eval_check_backend(const struct dsa_eval *e, const char *kind)
{
    if (strcmp(kind, "inprocess") || e->inprocess)
        return 0;
    return dsa_errorf("'%s' does not run in-process (--backend inprocess); use --endpoint",
                      e->name);
}
