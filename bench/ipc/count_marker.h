/* The markers ipcheck-bench-count (count_tracer.c) counts between: an `int3` with
 * rax = IPCHECK_COUNT_MAGIC, rdi = IPCHECK_COUNT_BEGIN or IPCHECK_COUNT_END, rsi = the region's
 * id. Place them only under that tracer: untraced, an int3 is a SIGTRAP that ends the
 * process. x86-64 only (IPCHECK_COUNT_MARKERS is 0 elsewhere). */
#pragma once

#define IPCHECK_COUNT_MAGIC 0x69706368636e7431ull /* "ipchcnt1" */
#define IPCHECK_COUNT_BEGIN 1ull
#define IPCHECK_COUNT_END 2ull

#if defined(__x86_64__)
#define IPCHECK_COUNT_MARKERS 1
static inline void ipcheck_count_mark(unsigned long long kind, unsigned long long id) {
  __asm__ volatile("int3" : : "a"(IPCHECK_COUNT_MAGIC), "D"(kind), "S"(id) : "memory");
}
#else
#define IPCHECK_COUNT_MARKERS 0
static inline void ipcheck_count_mark(unsigned long long kind, unsigned long long id) {
  (void)kind;
  (void)id;
}
#endif
