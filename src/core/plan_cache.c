/*
 * The plan cache: expensive set-up (FFT plans, kernel spectra) kept per
 * context and keyed by bytes, least recently used entries dropped beyond a
 * memory budget. A context is used by one thread at a time, so entries
 * handed out stay valid until the next put or clear.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    struct entry *prev, *next; /* most recently used first */
    void *key;
    size_t len, bytes;
    void *value;
    void (*destroy)(void *);
} entry;

struct lumen_plan_cache {
    entry *head, *tail;
    size_t bytes, budget;
};

lumen_plan_cache *lumen_plan_cache_create(size_t budget_bytes)
{
    lumen_plan_cache *c = calloc(1, sizeof *c);
    if (c) c->budget = budget_bytes;
    return c;
}

static void unlink_entry(lumen_plan_cache *c, entry *e)
{
    if (e->prev) e->prev->next = e->next;
    else c->head = e->next;
    if (e->next) e->next->prev = e->prev;
    else c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(lumen_plan_cache *c, entry *e)
{
    e->next = c->head;
    if (c->head) c->head->prev = e;
    c->head = e;
    if (!c->tail) c->tail = e;
}

static void drop(lumen_plan_cache *c, entry *e)
{
    unlink_entry(c, e);
    c->bytes -= e->bytes;
    if (e->destroy) e->destroy(e->value);
    free(e->key);
    free(e);
}

void lumen_plan_cache_clear(lumen_plan_cache *c)
{
    while (c && c->head) drop(c, c->head);
}

void lumen_plan_cache_destroy(lumen_plan_cache *c)
{
    lumen_plan_cache_clear(c);
    free(c);
}

void *lumen_plan_cache_get(lumen_plan_cache *c, const void *key, size_t len)
{
    for (entry *e = c ? c->head : NULL; e; e = e->next) {
        if (e->len == len && !memcmp(e->key, key, len)) {
            unlink_entry(c, e);
            push_front(c, e);
            return e->value;
        }
    }
    return NULL;
}

void *lumen_plan_cache_take(lumen_plan_cache *c, const void *key, size_t len)
{
    for (entry *e = c ? c->head : NULL; e; e = e->next) {
        if (e->len == len && !memcmp(e->key, key, len)) {
            void *value = e->value;
            e->destroy = NULL; /* the caller owns it now */
            drop(c, e);
            return value;
        }
    }
    return NULL;
}

void *lumen_plan_cache_put(lumen_plan_cache *c, const void *key, size_t len, void *value,
                           void (*destroy)(void *), size_t bytes)
{
    entry *e = c ? calloc(1, sizeof *e) : NULL;
    void *k = e ? malloc(len) : NULL;
    if (!k) {
        free(e);
        if (destroy) destroy(value);
        return NULL;
    }
    memcpy(k, key, len);
    *e = (entry){NULL, NULL, k, len, bytes, value, destroy};
    push_front(c, e);
    c->bytes += bytes;
    while (c->bytes > c->budget && c->tail != e) drop(c, c->tail);
    return value;
}
