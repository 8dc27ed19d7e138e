/* What both C test hosts share (c_host.c, FMI 2.0; c_host3.c, FMI 3.0): the command line after
 * BINARY RESOURCES TOKEN (STEP NSTEPS NIN VR_IN... VALUE_IN... NOUT VR_OUT...), loading the
 * binary, printing a row. */

#ifndef HOST_ARGS_H
#define HOST_ARGS_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    double h;               /* communication step [s] */
    int nsteps, nin, nout;
    unsigned vin[64];       /* input value references and their constant values */
    double uin[64];
    unsigned vout[256];     /* output value references */
} HostArgs;

/* var = the binary's symbol sym, of function type `type`; else the host exits with status 3. */
#define NEED(var, type, sym)                                                   \
    type var = (type)dlsym(lib, sym);                                           \
    if (!var) {                                                                 \
        fprintf(stderr, "missing %s\n", sym);                                   \
        return 3;                                                               \
    }

/* Read argv[4...] into a; 0 when they do not fit it. */
static int host_args(int argc, char **argv, HostArgs *a)
{
    int k = 6;
    if (argc < 8) return 0;
    a->h = atof(argv[4]);
    a->nsteps = atoi(argv[5]);
    a->nin = atoi(argv[k++]);
    if (a->nin < 0 || a->nin > 64 || argc < k + 2 * a->nin + 1) return 0;
    for (int i = 0; i < a->nin; i++) a->vin[i] = (unsigned)atoi(argv[k++]);
    for (int i = 0; i < a->nin; i++) a->uin[i] = atof(argv[k++]);
    a->nout = atoi(argv[k++]);
    if (a->nout < 0 || a->nout > 256 || argc < k + a->nout) return 0;
    for (int i = 0; i < a->nout; i++) a->vout[i] = (unsigned)atoi(argv[k++]);
    return 1;
}

/* The FMU's binary, loaded as a host loads it; NULL (said on stderr) when it cannot be. */
static void *load_binary(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) fprintf(stderr, "dlopen: %s\n", dlerror());
    return lib;
}

/* One row of the output: "t y1 y2 ..." with 17 significant digits (every bit of a double). */
static void print_row(double t, const double *y, int n)
{
    printf("%.17g", t);
    for (int i = 0; i < n; i++) printf(" %.17g", y[i]);
    printf("\n");
}

#endif
