/* TEMPORARY local stand-in for dsa_run_load until branch store lands; never committed. */
#include <string.h>
#include "store/store.h"
#include "util/json.h"
#include "util/lines.h"
#include "util/msg.h"
int dsa_run_load(const char *path, json_t **header, json_t **records)
{
    dsa_lines *r = dsa_lines_open(path);
    if (!r)
        return -1;
    *header = NULL;
    *records = json_array();
    const char *line;
    size_t len;
    int rc;
    while ((rc = dsa_lines_next(r, &line, &len)) == 1) {
        if (len == 0)
            continue;
        struct dsa_json_where w = {path, dsa_lines_lineno(r)};
        json_t *o = dsa_json_parse_object(line, len, &w);
        if (!o) {
            if (dsa_lines_unterminated(r)) break;
            json_decref(*records);
            dsa_lines_free(&r);
            return -1;
        }
        if (!*header && dsa_lines_lineno(r) == 1 && json_object_get(o, "dsa_eval_run")) {
            *header = o;
            continue;
        }
        json_array_append_new(*records, o);
    }
    dsa_lines_free(&r);
    if (!*header)
        *header = json_object();
    return rc < 0 ? -1 : 0;
}
