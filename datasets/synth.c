/*
 * Synthetic MRCR generator (see synth.h for the row shape and the determinism rule).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "datasets/synth.h"

#include <errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/mrcr.h"
#include "datasets/tokenize.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/fs.h"
#include "util/msg.h"

/* The formats of the real rows (docs/mrcr.md "The dataset"). */
static const char *const formats[] = {
    "poem",
    "song",
    "riddle",
    "email",
    "formal letter",
    "social media post",
    "short essay",
    "short news article",
    "short scene in a play",
    "diary entry",
};
static const char *const topics[] = {
    "tapirs",    "pears",     "distance", "faculty", "lighthouses", "glaciers",  "bicycles",
    "libraries", "volcanoes", "owls",     "bridges", "tea",         "deserts",   "clocks",
    "rivers",    "markets",   "comets",   "gardens", "trains",      "bees",      "harbors",
    "mountains", "violins",   "bakeries", "storms",  "maps",        "lanterns",  "orchards",
    "caves",     "whales",    "snow",     "chess",   "kites",       "mushrooms", "telescopes",
    "islands",   "festivals", "foxes",    "ink",     "silence",
};
static const char *const words[] = {
    "the",     "a",        "quiet",   "bright",    "old",       "new",       "small",    "vast",
    "morning", "evening",  "light",   "shadow",    "water",     "stone",     "wind",     "road",
    "city",    "field",    "heart",   "voice",     "memory",    "dream",     "window",   "door",
    "river",   "sky",      "fire",    "song",      "story",     "season",    "winter",   "summer",
    "walks",   "waits",    "sings",   "turns",     "carries",   "remembers", "finds",    "keeps",
    "holds",   "follows",  "opens",   "gathers",   "shines",    "rests",     "moves",    "returns",
    "slowly",  "softly",   "always",  "never",     "again",     "together",  "alone",    "here",
    "there",   "beyond",   "beneath", "across",    "through",   "with",      "without",  "under",
    "and",     "but",      "while",   "because",   "until",     "so",        "of",       "in",
    "on",      "to",       "from",    "for",       "every",     "some",      "many",     "few",
    "golden",  "silver",   "green",   "blue",      "red",       "gentle",    "wild",     "distant",
    "people",  "children", "friends", "travelers", "neighbors", "workers",   "hands",    "eyes",
    "time",    "place",    "world",   "home",      "garden",    "street",    "harbor",   "valley",
    "hope",    "change",   "work",    "music",     "laughter",  "care",      "patience", "wonder",
};
static const char *const names[] = {
    "Alice", "Bruno", "Chen",  "Dana", "Elif", "Farid", "Greta", "Hiro",
    "Ines",  "Jonas", "Keiko", "Luis", "Maya", "Nadia", "Omar",  "Priya",
};
static const char *const bin_names[DSA_MRCR_NBINS] = {"8k",   "16k",  "32k",  "64k",
                                                      "128k", "256k", "512k", "1m"};
static const char prefix_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

#define PICK(rng, arr) ((arr)[gsl_rng_uniform_int((rng), DSA_ARRAY_SIZE(arr))])

static size_t range(gsl_rng *rng, size_t lo, size_t hi) /* uniform in [lo, hi] */
{
    return lo + gsl_rng_uniform_int(rng, hi - lo + 1);
}

static void add_capitalized(struct dsa_buf *b, const char *w)
{
    dsa_buf_addch(b, (char)(w[0] >= 'a' && w[0] <= 'z' ? w[0] - 'a' + 'A' : w[0]));
    dsa_buf_adds(b, w + 1);
}

/* words separated by spaces; the topic appears now and then so pieces stay on topic */
static void add_words(gsl_rng *rng, struct dsa_buf *b, size_t n, const char *topic, bool cap)
{
    for (size_t i = 0; i < n; i++) {
        const char *w = gsl_rng_uniform_int(rng, 9) == 0 ? topic : PICK(rng, words);
        if (i)
            dsa_buf_addch(b, ' ');
        if (i == 0 && cap)
            add_capitalized(b, w);
        else
            dsa_buf_adds(b, w);
    }
}

static void add_sentence(gsl_rng *rng, struct dsa_buf *b, const char *topic)
{
    add_words(rng, b, range(rng, 6, 14), topic, true);
    static const char *const ends[] = {".", ".", ".", "!", "?", ";", "."};
    dsa_buf_adds(b, PICK(rng, ends));
}

static void add_paragraph(gsl_rng *rng, struct dsa_buf *b, const char *topic, size_t lo, size_t hi)
{
    size_t n = range(rng, lo, hi);
    for (size_t i = 0; i < n; i++) {
        if (i)
            dsa_buf_addch(b, ' ');
        add_sentence(rng, b, topic);
    }
}

/* n paragraphs of lo..hi sentences, a blank line between them */
static void add_paragraphs(gsl_rng *rng, struct dsa_buf *b, const char *topic, size_t n, size_t lo,
                           size_t hi)
{
    for (size_t s = 0; s < n; s++) {
        if (s)
            dsa_buf_adds(b, "\n\n");
        add_paragraph(rng, b, topic, lo, hi);
    }
}

static void add_lines(gsl_rng *rng, struct dsa_buf *b, const char *topic, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        add_words(rng, b, range(rng, 4, 8), topic, true);
        dsa_buf_adds(b, i + 1 < n ? ",\n" : ".\n");
    }
}

/* The assistant's piece for "write a {format} about {topic}"; short_form for the few-shot
   examples. */
static void make_piece(gsl_rng *rng, struct dsa_buf *b, size_t fmt, const char *topic,
                       bool short_form)
{
    size_t paras = short_form ? 1 : range(rng, 2, 3);
    const char *who = PICK(rng, names), *to = PICK(rng, names);
    switch (fmt) {
    case 0: /* poem */
        dsa_buf_addf(b, "**Ode to %s**\n\n", topic);
        for (size_t s = 0; s < paras; s++) {
            if (s)
                dsa_buf_addch(b, '\n');
            add_lines(rng, b, topic, 4);
        }
        break;
    case 1: /* song */
        for (size_t s = 0; s < paras; s++) {
            dsa_buf_addf(b, "%s**Verse %zu**\n", s ? "\n" : "", s + 1);
            add_lines(rng, b, topic, 4);
            if (!s) {
                dsa_buf_adds(b, "\n**Chorus**\n");
                add_lines(rng, b, topic, 2);
            }
        }
        break;
    case 2: /* riddle */
        add_lines(rng, b, topic, short_form ? 2 : range(rng, 4, 6));
        dsa_buf_addf(b, "\nWhat am I? The answer: %s.", topic);
        break;
    case 3: /* email */
        dsa_buf_addf(b, "Subject: About %s\n\nHi %s,\n\n", topic, to);
        add_paragraphs(rng, b, topic, paras, 2, 4);
        dsa_buf_adds(b, "\n\n");
        dsa_buf_addf(b, "Best regards,\n%s", who);
        break;
    case 4: /* formal letter */
        dsa_buf_addf(b, "Dear %s,\n\n", to);
        add_paragraphs(rng, b, topic, paras, 2, 4);
        dsa_buf_adds(b, "\n\n");
        dsa_buf_addf(b, "Sincerely,\n%s", who);
        break;
    case 5: /* social media post */
        add_paragraph(rng, b, topic, 2, 3);
        dsa_buf_addf(b, " #%s #%s", topic, PICK(rng, words));
        break;
    case 6: /* short essay */
    case 7: /* short news article */
        dsa_buf_adds(b, "**");
        add_words(rng, b, range(rng, 3, 6), topic, true);
        dsa_buf_adds(b, "**\n\n");
        add_paragraphs(rng, b, topic, paras, 3, 5);
        break;
    case 8: /* short scene in a play */
        dsa_buf_addf(b, "*A room full of %s.*\n\n", topic);
        for (size_t s = 0, n = short_form ? 2 : range(rng, 4, 7); s < n; s++) {
            dsa_buf_addf(b, "**%s:** ", s % 2 ? to : who);
            add_sentence(rng, b, topic);
            dsa_buf_addch(b, '\n');
        }
        break;
    default: /* diary entry */
        dsa_buf_adds(b, "Dear Diary,\n\n");
        add_paragraphs(rng, b, topic, paras, 2, 4);
        break;
    }
}

static const char *ordinal_suffix(size_t k)
{
    if (k % 100 >= 11 && k % 100 <= 13)
        return "th";
    switch (k % 10) {
    case 1:
        return "st";
    case 2:
        return "nd";
    case 3:
        return "rd";
    default:
        return "th";
    }
}

static void add_question(struct dsa_buf *b, const char *prefix, size_t k, size_t fmt,
                         const char *topic)
{
    dsa_buf_addf(b,
                 "Prepend %s to the %zu%s (1 indexed) %s about %s. Do not include any other "
                 "text in your response.",
                 prefix, k, ordinal_suffix(k), formats[fmt], topic);
}

static void make_prefix(gsl_rng *rng, char out[11])
{
    for (int i = 0; i < 10; i++)
        out[i] = prefix_alphabet[gsl_rng_uniform_int(rng, sizeof prefix_alphabet - 1)];
    out[10] = '\0';
}

/* messages[0]: the few-shot block, two short example conversations (docs/mrcr.md "The dataset"). */
static void make_header(gsl_rng *rng, struct dsa_buf *b)
{
    dsa_buf_adds(b, "Here are some examples of conversations succeeded by a follow-up question "
                    "answered correctly:\n\n");
    for (int e = 0; e < 2; e++) {
        size_t fmt = gsl_rng_uniform_int(rng, DSA_ARRAY_SIZE(formats));
        const char *topic = PICK(rng, topics);
        char prefix[11];
        make_prefix(rng, prefix);
        struct dsa_buf want = DSA_BUF_INIT;
        dsa_buf_adds(b, "======EXAMPLE======\n");
        for (int t = 0; t < 3; t++) {
            size_t f = fmt;
            const char *top = topic;
            while (t == 1 && f == fmt && top == topic) { /* turn 1 is another request */
                f = gsl_rng_uniform_int(rng, DSA_ARRAY_SIZE(formats));
                top = PICK(rng, topics);
            }
            struct dsa_buf piece = DSA_BUF_INIT;
            make_piece(rng, &piece, f, top, true);
            dsa_buf_addf(b, "User: write a %s about %s\nAssistant: %s\n", formats[f], top,
                         piece.data);
            if (t == 2) /* the 2nd request for (fmt, topic) */
                dsa_buf_addf(&want, "%s%s", prefix, piece.data);
            dsa_buf_release(&piece);
        }
        dsa_buf_adds(b, "User: ");
        add_question(b, prefix, 2, fmt, topic);
        dsa_buf_addf(b, "\nAssistant: %s\n======END EXAMPLE======\n\n", want.data);
        dsa_buf_release(&want);
    }
    dsa_buf_adds(b, "Now the real conversation begins.");
}

static size_t utf8_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

struct pair {
    char *user, *assistant;
};

static void make_pair(gsl_rng *rng, struct pair *p, size_t fmt, const char *topic)
{
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_addf(&b, "write a %s about %s", formats[fmt], topic);
    p->user = dsa_buf_detach(&b, NULL);
    make_piece(rng, &b, fmt, topic, false);
    p->assistant = dsa_buf_detach(&b, NULL);
}

static size_t tok(const char *s)
{
    return dsa_tok_count(s, strlen(s));
}

static void push_message(json_t *msgs, const char *role, const char *content, size_t *chars,
                         size_t *tokens)
{
    json_t *m = json_object();
    json_object_set_new(m, "role", json_string(role));
    json_object_set_new(m, "content", json_string(content));
    json_array_append_new(msgs, m);
    *chars += utf8_chars(content, strlen(content));
    *tokens += tok(content);
}

/* Builds one row of bin k and writes it as a JSONL line. */
static int write_row(FILE *out, const char *out_name, gsl_rng *rng, int n_needles, int k)
{
    int ret = -1;
    long hi = 8192L << k, lo = k ? 4096L << k : 4096L;
    /* aim well inside the bin: one more pair (< 400 tokens) can never cross an edge */
    long width = hi - lo;
    long target = lo + width / 10 + (long)gsl_rng_uniform_int(rng, (unsigned long)(width * 8 / 10));

    struct dsa_buf header = DSA_BUF_INIT, question = DSA_BUF_INIT, answer = DSA_BUF_INIT;
    size_t fmt = gsl_rng_uniform_int(rng, DSA_ARRAY_SIZE(formats));
    const char *topic = PICK(rng, topics);
    size_t want = 1 + gsl_rng_uniform_int(rng, (unsigned long)n_needles); /* 1-indexed */
    char prefix[11];
    make_prefix(rng, prefix);
    make_header(rng, &header);
    add_question(&question, prefix, want, fmt, topic);

    struct pair *needles = dsa_xcalloc((size_t)n_needles, sizeof *needles);
    for (int i = 0; i < n_needles; i++)
        make_pair(rng, &needles[i], fmt, topic);
    dsa_buf_addf(&answer, "%s%s", prefix, needles[want - 1].assistant);

    size_t base = tok(header.data) + tok(question.data) + tok(answer.data);
    for (int i = 0; i < n_needles; i++)
        base += tok(needles[i].user) + tok(needles[i].assistant);

    /* fillers: any request but the needle's own (format, topic) */
    size_t nfill = 0, capfill = 64, total = base;
    struct pair *fill = dsa_xmalloc(capfill * sizeof *fill);
    while ((long)total < target) {
        size_t f;
        const char *t;
        do {
            f = gsl_rng_uniform_int(rng, DSA_ARRAY_SIZE(formats));
            t = PICK(rng, topics);
        } while (f == fmt && t == topic);
        if (nfill == capfill)
            fill = dsa_xrealloc(fill, (capfill *= 2) * sizeof *fill);
        make_pair(rng, &fill[nfill], f, t);
        total += tok(fill[nfill].user) + tok(fill[nfill].assistant);
        nfill++;
    }

    /* needle positions among all pairs, ascending: the ith needle is the ith occurrence */
    size_t npairs = nfill + (size_t)n_needles;
    size_t *all = dsa_xmalloc(npairs * sizeof *all),
           *pos = dsa_xmalloc((size_t)n_needles * sizeof *pos);
    for (size_t i = 0; i < npairs; i++)
        all[i] = i;
    gsl_ran_choose(rng, pos, (size_t)n_needles, all, npairs, sizeof *all);

    json_t *msgs = json_array();
    size_t chars = 0, tokens = 0, fi = 0, ni = 0;
    long desired = -1;
    push_message(msgs, "user", header.data, &chars, &tokens);
    for (size_t p = 0; p < npairs; p++) {
        const struct pair *pr;
        if (ni < (size_t)n_needles && pos[ni] == p) {
            if (ni + 1 == want)
                desired = (long)json_array_size(msgs); /* the needle is messages[desired + 1] */
            pr = &needles[ni++];
        } else {
            pr = &fill[fi++];
        }
        push_message(msgs, "user", pr->user, &chars, &tokens);
        push_message(msgs, "assistant", pr->assistant, &chars, &tokens);
    }
    push_message(msgs, "user", question.data, &chars, &tokens);
    tokens += tok(answer.data);
    if (dsa_mrcr_bin_of_tokens((long)tokens) != k || (long)tokens < lo) {
        dsa_errorf("internal error: synthetic row of %zu tokens missed bin %s", tokens,
                   bin_names[k]);
        goto cleanup;
    }

    char *prompt = json_dumps(msgs, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_t *row = json_object();
    json_object_set_new(row, "prompt", json_string(prompt));
    free(prompt);
    json_object_set_new(row, "answer", json_string(answer.data));
    json_object_set_new(row, "random_string_to_prepend", json_string(prefix));
    json_object_set_new(row, "n_needles", json_integer(n_needles));
    json_object_set_new(row, "desired_msg_index", json_integer(desired));
    json_object_set_new(row, "total_messages", json_integer((json_int_t)json_array_size(msgs)));
    json_object_set_new(row, "n_chars", json_integer((json_int_t)chars));
    json_object_set_new(row, "date_added", json_string("synthetic"));
    json_object_set_new(row, "bin", json_string(bin_names[k]));
    json_object_set_new(row, "context_tokens", json_integer((json_int_t)tokens));
    char *line = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(row);
    errno = 0;
    if (fputs(line, out) == EOF || fputc('\n', out) == EOF) {
        /* | head: main() ends quietly */
        if (out != stdout || !dsa_fd_reader_gone(STDOUT_FILENO))
            dsa_errorf("cannot write '%s': %s", out_name, strerror(errno ? errno : EIO));
    } else {
        ret = 0;
    }
    free(line);

cleanup:
    json_decref(msgs);
    for (int i = 0; i < n_needles; i++)
        free(needles[i].user), free(needles[i].assistant);
    for (size_t i = 0; i < nfill; i++)
        free(fill[i].user), free(fill[i].assistant);
    free(needles);
    free(fill);
    free(all);
    free(pos);
    dsa_buf_release(&header);
    dsa_buf_release(&question);
    dsa_buf_release(&answer);
    return ret;
}

int dsa_synth_mrcr_write(FILE *out, const struct dsa_synth_mrcr_opts *o, const char *out_name)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    int ret = 0;
    for (int n = 1; n <= DSA_MRCR_MAX_NEEDLES && !ret; n++) {
        if (!(o->needles_mask & (1u << n)))
            continue;
        for (int k = 0; k < DSA_MRCR_NBINS && !ret; k++) {
            if (!(o->bins_mask & (1u << k)))
                continue;
            for (int i = 0; i < o->per_bin && !ret; i++) {
                if (o->interrupted && *o->interrupted) {
                    ret = 1;
                    break;
                }
                char label[64];
                snprintf(label, sizeof label, "mrcr/n%d/b%d/i%d", n, k, i);
                uint32_t s = (uint32_t)dsa_splitmix64(o->seed ^ dsa_fnv1a64(label, strlen(label)));
                gsl_rng_set(rng, s ? s : 1);
                ret = write_row(out, out_name, rng, n, k);
            }
        }
    }
    gsl_rng_free(rng);
    return ret;
}
