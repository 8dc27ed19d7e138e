/* A minimal fixed-step co-simulation master in C for several FMI 2.0 co-simulation FMUs, as a
 * C host (a Modelica or Simulink tool's co-simulation) drives them: benchmarks/fmu_overhead.py
 * writes a plan, this program runs it and prints the CPU time of the step loop and the final
 * value of every connection's source.
 *
 * usage: c_master PLAN
 * PLAN lines (whitespace separated; URIs and paths without spaces):
 *   element NAME BINARY RESOURCE_URI GUID
 *   real NAME VR VALUE           parameter or start value, set in initialization mode
 *   string NAME VR VALUE
 *   link SRC_NAME SRC_VR DST_NAME DST_VR
 *   sequence NAME...             Gauss-Seidel order (every element once)
 *   run STEP NSTEPS
 * Each element in sequence gets its inputs from the latest values of their sources, steps, and
 * its sources are read (the scheme of flexmbs.fmi.cosim.Master with Assembly.sequence).
 * Output: "elapsed SECONDS STEPS" (CPU time of the steps after the first, which loads the
 * compiled kernels), then one line "link K VALUE" per connection (17 digits).
 * Exit status: 0 ok, 2 usage or plan, 3 load, 4 instantiate, 5 a call failed. */

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/fmi2_host.h"   /* Comp, Callbacks */

#define MAX_E 32
#define MAX_L 128
#define MAX_P 256


static void logger(void *env, const char *name, int status, const char *category, const char *message, ...)
{
    (void)env;
    if (status > 0) fprintf(stderr, "[%s|%d|%s] %s\n", name, status, category ? category : "", message);
}

typedef struct {
    char name[64];
    Comp c;
    Comp (*instantiate)(const char *, int, const char *, const char *, const Callbacks *, int, int);
    int (*setup)(Comp, int, double, double, int, double);
    int (*enter)(Comp);
    int (*exit_)(Comp);
    int (*setReal)(Comp, const unsigned *, size_t, const double *);
    int (*getReal)(Comp, const unsigned *, size_t, double *);
    int (*setString)(Comp, const unsigned *, size_t, const char *const *);
    int (*doStep)(Comp, double, double, int);
    int (*terminate)(Comp);
    void (*freeInstance)(Comp);
} Element;

typedef struct {
    int src, dst;
    unsigned src_vr, dst_vr;
    double value;
} Link;

typedef struct {
    int e, is_string;
    unsigned vr;
    double value;
    char text[128];
} Param;

static Element el[MAX_E];
static Link ln[MAX_L];
static Param pm[MAX_P];
static int ne, nl, np_, order[MAX_E], norder;

static int find(const char *name)
{
    for (int i = 0; i < ne; i++)
        if (strcmp(el[i].name, name) == 0) return i;
    fprintf(stderr, "plan: no element %s\n", name);
    exit(2);
}

#define SYM(e, field, sym)                                                            \
    *(void **)(&(e)->field) = dlsym(lib, sym);                                        \
    if (!(e)->field) {                                                                \
        fprintf(stderr, "%s lacks %s\n", binary, sym);                                \
        return 3;                                                                     \
    }

static int load(Element *e, const char *binary, const char *uri, const char *guid, const Callbacks *cb)
{
    void *lib = dlopen(binary, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 3;
    }
    SYM(e, instantiate, "fmi2Instantiate") SYM(e, setup, "fmi2SetupExperiment")
    SYM(e, enter, "fmi2EnterInitializationMode") SYM(e, exit_, "fmi2ExitInitializationMode")
    SYM(e, setReal, "fmi2SetReal") SYM(e, getReal, "fmi2GetReal") SYM(e, setString, "fmi2SetString")
    SYM(e, doStep, "fmi2DoStep") SYM(e, terminate, "fmi2Terminate") SYM(e, freeInstance, "fmi2FreeInstance")
    e->c = e->instantiate(e->name, 1, guid, uri, cb, 0, 0);
    return e->c ? 0 : 4;
}

/* Set element e's inputs from the current link values. */
static int feed(int e)
{
    for (int k = 0; k < nl; k++)
        if (ln[k].dst == e && el[e].setReal(el[e].c, &ln[k].dst_vr, 1, &ln[k].value)) return 5;
    return 0;
}

/* Read the link sources of element e. */
static int read_sources(int e)
{
    for (int k = 0; k < nl; k++)
        if (ln[k].src == e && el[e].getReal(el[e].c, &ln[k].src_vr, 1, &ln[k].value)) return 5;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    FILE *f = fopen(argv[1], "r");
    if (!f) return 2;
    static Callbacks cb = {logger, calloc, free, NULL, NULL};
    char kind[32], a[4096], b[4096], c[4096], d[256];
    double h = 0.0;
    int nsteps = 0;
    while (fscanf(f, "%31s", kind) == 1) {
        if (strcmp(kind, "element") == 0 && ne < MAX_E && fscanf(f, "%63s %4095s %4095s %4095s", el[ne].name, a, b, c) == 4) {
            int rc = load(&el[ne], a, b, c, &cb);
            if (rc) return rc;
            ne++;
        } else if ((strcmp(kind, "real") == 0 || strcmp(kind, "string") == 0) && np_ < MAX_P &&
                   fscanf(f, "%63s %u %127s", d, &pm[np_].vr, pm[np_].text) == 3) {
            pm[np_].e = find(d);
            pm[np_].is_string = kind[0] == 's';
            pm[np_].value = atof(pm[np_].text);
            np_++;
        } else if (strcmp(kind, "link") == 0 && nl < MAX_L &&
                   fscanf(f, "%63s %u %255s %u", a, &ln[nl].src_vr, d, &ln[nl].dst_vr) == 4) {
            ln[nl].src = find(a);
            ln[nl].dst = find(d);
            nl++;
        } else if (strcmp(kind, "sequence") == 0) {
            for (norder = 0; norder < ne && fscanf(f, "%63s", d) == 1; norder++) order[norder] = find(d);
        } else if (strcmp(kind, "run") == 0 && fscanf(f, "%lf %d", &h, &nsteps) == 2) {
        } else {
            fprintf(stderr, "plan: cannot read '%s'\n", kind);
            return 2;
        }
    }
    fclose(f);
    if (norder != ne || h <= 0.0 || nsteps < 2) return 2;
    for (int e = 0; e < ne; e++) {
        Element *x = &el[e];
        if (x->setup(x->c, 0, 0.0, 0.0, 0, 0.0)) return 5;
        for (int p = 0; p < np_; p++) {
            if (pm[p].e != e) continue;
            const char *text = pm[p].text;
            if (pm[p].is_string ? x->setString(x->c, &pm[p].vr, 1, &text) : x->setReal(x->c, &pm[p].vr, 1, &pm[p].value))
                return 5;
        }
        if (x->enter(x->c) || x->exit_(x->c)) return 5;
    }
    for (int e = 0; e < ne; e++)
        if (read_sources(e)) return 5;
    for (int e = 0; e < ne; e++)
        if (feed(e)) return 5;
    struct timespec t0, t1;
    double t = 0.0;   /* accumulated as the Python master does, so both step from the same times */
    for (int s = 0; s < nsteps; s++, t += h) {
        if (s == 1) clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
        for (int i = 0; i < ne; i++) {
            int e = order[i];
            if (feed(e) || el[e].doStep(el[e].c, t, h, 1) || read_sources(e)) return 5;
        }
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    printf("elapsed %.9f %d\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), nsteps - 1);
    for (int k = 0; k < nl; k++) printf("link %d %.17g\n", k, ln[k].value);
    for (int e = 0; e < ne; e++) {
        el[e].terminate(el[e].c);
        el[e].freeInstance(el[e].c);
    }
    return 0;
}
