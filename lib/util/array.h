/* Growable arrays: any `T *items` with its capacity beside it. The count
 * stays the caller's (it is often part of a public struct); this only makes
 * room, doubling from 8, and checks the size arithmetic for overflow. */
#ifndef KERNELS_LIB_UTIL_ARRAY_H
#define KERNELS_LIB_UTIL_ARRAY_H

#include <stddef.h>

/* Makes room for `need` items of `size` bytes in the array whose address is
 * at `items_ptr` (a T ** passed as void *) and whose capacity is *cap.
 * 0, or KERNELS_ENOMEM with the error set and the array as it was. */
int kernels__array_reserve(void *items_ptr, size_t *cap, size_t need, size_t size);

/* KERNELS__ARRAY_GROW(v, cap, n): room for one item more than `n` in the
 * array `v` of capacity `cap` (both lvalues), as
 *	if (KERNELS__ARRAY_GROW(l->items, l->cap, l->n) < 0)
 *		return KERNELS_ENOMEM;
 *	l->items[l->n++] = x; */
#define KERNELS__ARRAY_GROW(v, cap, n) kernels__array_reserve(&(v), &(cap), (n) + 1, sizeof(*(v)))

#endif
