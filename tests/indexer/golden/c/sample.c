/* Ring buffer for fixed-size records. */
#include <stdlib.h>
#include <string.h>
#include "ring.h"

#define RING_MIN 4
#define RING_IDX(r, i) (((r)->head + (i)) % (r)->cap)

static const int ring_version = 2;
int ring_debug = 0;

/* One slot of the buffer. */
struct slot {
    size_t len;
    char data[64];
};

typedef struct ring {
    struct slot *slots;
    size_t head, count, cap;
} ring_t;

enum ring_status { RING_OK, RING_FULL, RING_EMPTY };

ring_t *ring_new(size_t cap);
static void ring_log(const char *msg);

/**
 * Allocate a ring with room for `cap` records.
 */
ring_t *ring_new(size_t cap)
{
    if (cap < RING_MIN)
        cap = RING_MIN;
    ring_t *r = malloc(sizeof *r);
    r->slots = calloc(cap, sizeof(struct slot));
    r->head = r->count = 0;
    r->cap = cap;
    ring_log("created");
    return r;
}

/* Push a record; fails when the ring is full. */
enum ring_status ring_push(ring_t *r, const char *data, size_t len)
{
    if (r->count == r->cap)
        return RING_FULL;
    struct slot *s = &r->slots[RING_IDX(r, r->count)];
    memcpy(s->data, data, len);
    s->len = len;
    r->count++;
    return RING_OK;
}

static void ring_log(const char *msg)
{
    if (ring_debug)
        fprintf(stderr, "ring: %s\n", msg);
}

static double
ring_ratio
 (struct ring *r)
{
    double q = 0;
#ifndef RING_UNCHECKED
#ifndef RING_EMPTY_OK
    if (r->cap > 0) {
#endif
#endif
#ifdef RING_TRACE
        ring_log("ratio");
#endif
        q = (double)r->count / r->cap;
#ifndef RING_UNCHECKED
#ifndef RING_EMPTY_OK
        }
    else {
        ring_log("empty");
        }
#endif
#endif
    return q;
}

int ring_after(void) { return 1; }

#define RING_OPS RING_OP(pop) RING_OP(peek)
static const struct ring_entry ring_table[] = {
#include "ring_ops.def"
  RING_ENTRY(ring_push, "push", 1),
#define RING_OP(name) RING_ENTRY(ring_ ## name, "_" #name, 2),
RING_OPS
#undef RING_OP
  RING_ENTRY(ring_free, "free", 1),
  RING_ENTRY(ring_size, "size", 1),
  RING_ENTRY(ring_size, "length", 1),
  RING_ENTRY(ring_clear, "clear", 1),
};
#undef RING_OPS

// The ring's last element and a copy of it, or the empty ring.
static ring_t ring_last(ring_t r) {
  ring_t last = ring_at(r, ring_count(r) - 1);
  ring_t copy = RING_PAIR(ring_clone(last),
                          ring_wrap(ring_nil()),
                          last);
  return RING_PAIR(copy,
                   ring_at(r, 0),
                   RING_PAIR(ring_wrap(last), copy));
}

struct ring_slot { const char *name; ring_t value; };
static ring_t ring_slots(ring_t r) {
  ring_t slots = ring_empty();
  return ring_join(slots, r);
}
