/* Clocks: the monotonic clock for deadlines, back-offs and stage timings
 * (never the wall clock, which may step), and a sleep that finishes its
 * time even when a signal interrupts it. */
#ifndef KERNELS_LIB_UTIL_CLOCK_H
#define KERNELS_LIB_UTIL_CLOCK_H

/* Milliseconds on CLOCK_MONOTONIC: whole ones for deadlines and ages, and
 * with their fraction for the timings kernels_get_ext reports. */
long long kernels__now_ms(void);
double kernels__now_ms_precise(void);

void kernels__sleep_ms(long ms);

#endif
