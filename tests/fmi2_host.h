/* The FMI 2.0 types a test host needs (the ABI of fmi2FunctionTypes.h), shared by the C hosts
 * of the tests (c_host.c, c_hostile.c) and the C master of the benchmarks (c_master.c). */

#ifndef FMI2_HOST_H
#define FMI2_HOST_H

#include <stddef.h>

typedef void *Comp;
typedef struct {
    void (*logger)(void *, const char *, int, const char *, const char *, ...);
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void *stepFinished;
    void *env;
} Callbacks;

#endif
