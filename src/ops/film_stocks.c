/*
 * Film stocks (docs/film.md): data/film_stocks.ini, embedded into the library at build time
 * (CMakeLists.txt makes <film_stocks_data.h> from it), parsed on each lookup. The file is the
 * one source of the presets: the CLI, Python and the studio all read them through here.
 *
 * Format: `[name]` sections, `key = value` lines, numbers separated by spaces, `#` comments on
 * their own lines. Numbers are read with strtod, so a C locale (the default) is assumed.
 */
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* film_stocks_ini[]: the file's bytes and a terminating zero (a build output) */
#include <film_stocks_data.h>

#define ERR_ARG LUMEN_ERR_INVALID_ARGUMENT

/* One line of the file without its newline and surrounding blanks, into buf; the position of
 * the next line, or NULL at the end. */
static const char *next_line(const char *p, char *buf, size_t size)
{
    if (!*p) return NULL;
    const char *end = strchr(p, '\n');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    const char *next = end ? end + 1 : p + n;
    while (n && isspace((unsigned char)p[0]))
        p++, n--;
    while (n && isspace((unsigned char)p[n - 1]))
        n--;
    if (n >= size) n = size - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return next;
}

/* Up to n numbers of a value into out; how many there were. */
static int numbers(const char *v, double *out, int n)
{
    int got = 0;
    for (char *end; got < n; v = end) {
        const double d = strtod(v, &end);
        if (end == v) break;
        out[got++] = d;
    }
    return got;
}

static lumen_status need(int got, int want, const char *stock, const char *key)
{
    if (got == want) return LUMEN_OK;
    return lumen_set_error(LUMEN_ERR_INTERNAL,
                           "film stock %s: %s has %d numbers, %d expected (data/film_stocks.ini)",
                           stock, key, got, want);
}

/* Sets the field `key` of s from the value v. */
static lumen_status set_key(lumen_film_stock *s, const char *key, const char *v)
{
    double d[9] = {0};
    if (!strcmp(key, "title")) {
        snprintf(s->title, sizeof s->title, "%.63s", v);
        return LUMEN_OK;
    }
    if (!strcmp(key, "tone")) {
        s->tone = !strcmp(v, "reinhard");
        return LUMEN_OK;
    }
    if (!strcmp(key, "bloom_mode")) {
        s->bloom_artistic = !strcmp(v, "artistic");
        return LUMEN_OK;
    }
    struct {
        const char *key;
        double *dst;
        int n;
    } const arrays[] = {
        {"matrix", s->matrix, 9},
        {"filmic", s->filmic, 6},
        {"bloom_eta", s->bloom.eta, 3},
        {"bloom_sigma", s->bloom.sigma, 3},
        {"bloom_kappa", s->bloom.kappa, 3},
        {"bloom_rho", s->bloom.rho, 3},
        {"halation_f", s->halation.f, 3},
        {"diffuse", s->diffuse, 3},
        {"direct", s->direct, 3},
        {"grain_layer", s->grain_layer, 3},
        {"grain_pan", &s->grain_pan, 1},
        {"sensitivity", &s->sensitivity, 1},
        {"bloom_threshold", &s->bloom.threshold, 1},
        {"halation_energy", &s->halation.energy_fraction, 1},
        {"halation_radius", &s->halation.psf_radius, 1},
        {"grain_intensity", &s->grain.intensity, 1},
        {"grain_size", &s->grain.size, 1},
        {"grain_density", &s->grain.density, 1},
        {"grain_exposure", &s->grain.exposure, 1},
        {"grain_amount", &s->grain.amount, 1},
    };
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        if (!strcmp(key, arrays[i].key)) {
            const int got = numbers(v, d, arrays[i].n);
            lumen_status st = need(got, arrays[i].n, s->name, key);
            if (!st) memcpy(arrays[i].dst, d, sizeof(double) * (size_t)got);
            return st;
        }
    int *ints[] = {&s->color, &s->iso, &s->halation_enabled};
    const char *int_keys[] = {"color", "iso", "halation"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(key, int_keys[i])) {
            lumen_status st = need(numbers(v, d, 1), 1, s->name, key);
            if (!st) *ints[i] = (int)d[0];
            return st;
        }
    return LUMEN_OK; /* keys for other readers (notes, sources) */
}

/* A stock before its section's keys: the ops' defaults. */
static void stock_init(lumen_film_stock *s, const char *name)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%.31s", name);
    s->color = 1;
    s->bloom = lumen_bloom_params_default();
    s->halation = lumen_halation_params_default();
    s->halation_enabled = 1;
    s->grain = lumen_grain_params_default();
    for (int i = 0; i < 3; i++)
        s->diffuse[i] = s->direct[i] = 0.5;
}

/* Walks the file: calls found(s, arg) for each stock, parsed; stops at a non-zero return. */
static lumen_status each_stock(int (*found)(const lumen_film_stock *s, void *arg), void *arg)
{
    char line[512];
    lumen_film_stock s;
    bool open = false;
    for (const char *p = (const char *)film_stocks_ini; (p = next_line(p, line, sizeof line));) {
        if (!line[0] || line[0] == '#') continue;
        if (line[0] == '[') {
            if (open && found(&s, arg)) return LUMEN_OK;
            char *close = strchr(line, ']');
            if (close) *close = '\0';
            stock_init(&s, line + 1);
            open = true;
            continue;
        }
        char *eq = strchr(line, '=');
        if (!open || !eq) continue;
        *eq = '\0';
        char *key = line, *v = eq + 1;
        for (char *e = eq - 1; e >= key && isspace((unsigned char)*e); e--)
            *e = '\0';
        while (isspace((unsigned char)*v))
            v++;
        lumen_status st = set_key(&s, key, v);
        if (st) return st;
    }
    if (open) found(&s, arg);
    return LUMEN_OK;
}

typedef struct name_list {
    char buf[1024];
    size_t len;
} name_list;

static int add_name(const lumen_film_stock *s, void *arg)
{
    name_list *l = arg;
    const int n =
        snprintf(l->buf + l->len, sizeof l->buf - l->len, "%s%s", l->len ? "," : "", s->name);
    if (n > 0 && (size_t)n < sizeof l->buf - l->len) l->len += (size_t)n;
    return 0;
}

const char *lumen_film_stock_names(void)
{
    static name_list names; /* the file never changes within a process */
    static bool done;
    if (!done) {
        name_list l = {.len = 0};
        l.buf[0] = '\0';
        each_stock(add_name, &l);
        names = l;
        done = true;
    }
    return names.buf;
}

typedef struct find_arg {
    const char *name;
    lumen_film_stock *out;
    bool found;
} find_arg;

static int match(const lumen_film_stock *s, void *arg)
{
    find_arg *f = arg;
    if (strcmp(s->name, f->name)) return 0;
    *f->out = *s;
    f->found = true;
    return 1;
}

lumen_status lumen_film_stock_get(const char *name, lumen_film_stock *out)
{
    lumen_clear_error();
    if (!name || !out) return lumen_set_error(ERR_ARG, "%s: NULL", name ? "out" : "name");
    find_arg f = {.name = name, .out = out};
    lumen_status s = each_stock(match, &f);
    if (s) return s;
    if (!f.found)
        return lumen_set_error(ERR_ARG, "stock: no film stock '%s' (there are: %s)", name,
                               lumen_film_stock_names());
    return LUMEN_OK;
}
