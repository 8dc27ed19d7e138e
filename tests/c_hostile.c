/* An FMI 2.0 co-simulation host in C that does what real hosts do beyond a plain run, one
 * pattern per invocation (tests/test_fmu_hostile.py, benchmarks/sanitize_front_end.py):
 *
 *   exit-free        frees its instance from an exit handler registered before the first
 *                    instantiation (runs after the FMU's own exit handler)
 *   locking-logger   a logger that takes the host's lock, while a second thread holding that
 *                    lock calls a second instance
 *   deserialize N    N fmi2DeSerializeFMUstate calls into the same (non-NULL) state; RSS
 *   cycles N         2 N instantiate / initialise / step / save a state (never freed) / free
 *                    cycles to warm up, then N more; RSS over the last N
 *   restore-after-terminate, after-discard, huge-step, bad-size   see each function
 *
 * usage: c_hostile PATTERN BINARY RESOURCE_URI GUID VR_INPUT VR_OUTPUT [N]
 * Every FMI call's status is checked against the one expected: exit status 0 and a last line
 * "ok PATTERN" when all were as expected, 10 with the failed check on stderr, 9 on a deadlock
 * (no progress within the watchdog's time), 2 usage, 3 load, 4 instantiate. Measurements are
 * printed as "NAME VALUE" lines. */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fmi2_host.h"


enum { OK = 0, WARNING = 1, DISCARD = 2, ERROR = 3 };
enum { LAST_SUCCESSFUL_TIME = 2 };

typedef struct {
    Comp (*instantiate)(const char *, int, const char *, const char *, const Callbacks *, int, int);
    int (*setup)(Comp, int, double, double, int, double);
    int (*enter)(Comp);
    int (*exit_)(Comp);
    int (*terminate)(Comp);
    int (*reset)(Comp);
    void (*free_)(Comp);
    int (*setReal)(Comp, const unsigned *, size_t, const double *);
    int (*getReal)(Comp, const unsigned *, size_t, double *);
    int (*doStep)(Comp, double, double, int);
    int (*getState)(Comp, void **);
    int (*setState)(Comp, void *);
    int (*freeState)(Comp, void **);
    int (*stateSize)(Comp, void *, size_t *);
    int (*serialize)(Comp, void *, char *, size_t);
    int (*deserialize)(Comp, const char *, size_t, void **);
    int (*getRealStatus)(Comp, int, double *);
} Api;

static Api api;
static const char *uri, *guid;
static unsigned vr_in, vr_out;

/* ------------------------------------------------------------------ the host's logger */

static pthread_mutex_t host_lock;     /* recursive: the host's own lock, taken by its logger */
static int logger_locks;              /* locking-logger: the logger takes host_lock */
static volatile long logged[5];       /* messages by status */

static void logger(void *env, const char *name, int status, const char *category, const char *message, ...)
{
    (void)env;
    if (logger_locks) pthread_mutex_lock(&host_lock);
    if (status >= 0 && status < 5) __atomic_add_fetch(&logged[status], 1, __ATOMIC_SEQ_CST);
    fprintf(stderr, "[%s|%d|%s] %s\n", name, status, category ? category : "", message);
    if (logger_locks) pthread_mutex_unlock(&host_lock);
}

static long errors_logged(void) { return logged[DISCARD] + logged[ERROR] + logged[4]; }

/* ------------------------------------------------------------------ helpers */

#define EXPECT(call, want)                                                                          \
    do {                                                                                            \
        int got_ = (call);                                                                          \
        if (got_ != (want)) {                                                                       \
            fprintf(stderr, "c_hostile line %d: %s returned %d, expected %d\n", __LINE__, #call, got_, \
                    (int)(want));                                                                   \
            exit(10);                                                                               \
        }                                                                                           \
    } while (0)

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "c_hostile line %d: %s does not hold\n", __LINE__, #cond);        \
            exit(10);                                                                         \
        }                                                                                     \
    } while (0)

static Callbacks callbacks = {logger, calloc, free, NULL, NULL};

/* A new instance, initialised at t = 0 with the input at `u`. */
static Comp start(const char *name, double u)
{
    Comp c = api.instantiate(name, 1, guid, uri, &callbacks, 0, 0);
    if (!c) {
        fprintf(stderr, "c_hostile: fmi2Instantiate returned NULL\n");
        exit(4);
    }
    EXPECT(api.setup(c, 0, 0.0, 0.0, 0, 0.0), OK);
    EXPECT(api.enter(c), OK);
    EXPECT(api.setReal(c, &vr_in, 1, &u), OK);
    EXPECT(api.exit_(c), OK);
    return c;
}

static double output(Comp c)
{
    double y = NAN;
    EXPECT(api.getReal(c, &vr_out, 1, &y), OK);
    return y;
}

static double last_successful(Comp c)
{
    double t = NAN;
    EXPECT(api.getRealStatus(c, LAST_SUCCESSFUL_TIME, &t), OK);
    return t;
}

/* Resident set size [bytes] (/proc/self/statm: pages). */
static long rss(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    if (f) fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

/* ------------------------------------------------------------------ patterns */

static Comp at_exit;

static void free_at_exit(void)
{
    int status = api.terminate(at_exit);
    api.free_(at_exit);
    printf("terminate-at-exit %d\nfreed-at-exit 1\n", status);
    fflush(stdout);
}

/* The exit handler is registered before the first instantiation, so it runs after every
   handler the FMU registers then: it must find the instance freeable, whatever the FMU did. */
static void exit_free(void)
{
    atexit(free_at_exit);
    at_exit = start("exit_free", 0.1);
    for (int k = 0; k < 3; k++) EXPECT(api.doStep(at_exit, k * 1e-3, 1e-3, 1), OK);
}

static Comp second;
static volatile int stop_second;
static volatile long second_calls;

/* The second thread: holding the host's lock, step and read the second instance. */
static void *hold_lock_and_call(void *arg)
{
    (void)arg;
    double t = 0.0;
    while (!stop_second) {
        pthread_mutex_lock(&host_lock);
        EXPECT(api.doStep(second, t, 1e-3, 1), OK);
        t += 1e-3;
        CHECK(isfinite(output(second)));
        usleep(200);
        pthread_mutex_unlock(&host_lock);
        second_calls++;
    }
    return NULL;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "c_hostile: deadlock (no progress within the watchdog's time)\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(9);
    _exit(9);
}

/* While the second thread holds the host's lock and calls its instance (which needs Python),
   this thread makes its own instance log (a NaN input is refused with an error): the logger
   takes the host's lock. A logger called with Python's lock held deadlocks here. */
static void locking_logger(int n)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&host_lock, &attr);
    Comp first = start("locking_first", 0.0);
    second = start("locking_second", 0.0);
    logger_locks = 1;
    signal(SIGALRM, on_alarm);
    alarm(120);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, hold_lock_and_call, NULL) == 0);
    const double nan = NAN, zero = 0.0;
    long before = logged[ERROR], i = 0;
    for (; i < n || second_calls < n; i++) {   /* until both threads made n calls */
        EXPECT(api.setReal(first, &vr_in, 1, &nan), WARNING);
        EXPECT(api.setReal(first, &vr_in, 1, &zero), OK);
    }
    stop_second = 1;
    pthread_join(th, NULL);
    alarm(0);
    logger_locks = 0;
    CHECK(logged[ERROR] - before >= i);
    printf("refusals-logged %ld\nsecond-thread-calls %ld\n", logged[ERROR] - before, second_calls);
    api.free_(first);
    api.free_(second);
}

/* A state made in a first instance, serialised; then n deserialisations into the same
   handle (FMI: a non-NULL handle is a state of this FMU to reuse). RSS must stay flat. */
/* A new state of c in *s, serialised: the bytes (malloc'd), their number in *size. */
static char *serialized(Comp c, void **s, size_t *size)
{
    EXPECT(api.getState(c, s), OK);
    EXPECT(api.stateSize(c, *s, size), OK);
    char *buf = malloc(*size);
    EXPECT(api.serialize(c, *s, buf, *size), OK);
    return buf;
}

static void deserialize(int n)
{
    Comp c = start("deserialize", 0.1);
    EXPECT(api.doStep(c, 0.0, 1e-3, 1), OK);
    void *s = NULL, *d = NULL;
    size_t size = 0;
    char *buf = serialized(c, &s, &size);
    int warm = n / 20;
    long rss_warm = 0;
    for (int i = 0; i < n; i++) {
        EXPECT(api.deserialize(c, buf, size, &d), OK);
        if (i == warm) rss_warm = rss();
    }
    long rss_end = rss();
    printf("state-bytes %zu\nrss-warm %ld\nrss-end %ld\nrss-per-call %.1f\n", size, rss_warm, rss_end,
           (double)(rss_end - rss_warm) / (n - warm - 1));
    EXPECT(api.setState(c, d), OK);
    EXPECT(api.doStep(c, 1e-3, 1e-3, 1), OK);
    EXPECT(api.freeState(c, &s), OK);
    free(buf);
    api.free_(c);   /* d is the instance's to free */
}

/* 3 n cycles of a full instance life, each leaving a saved state for the instance to free;
   RSS over the last n (the first fill the Python runtime's own bounded caches: CPython's
   attribute-lookup cache keeps 4096 names, numba caches types). */
static void cycles(int n)
{
    int warm = 2 * n - 1;
    long rss_warm = 0;
    for (int i = 0; i < 3 * n; i++) {
        Comp c = start("cycle", 0.1);
        EXPECT(api.doStep(c, 0.0, 1e-3, 1), OK);
        void *s = NULL;
        EXPECT(api.getState(c, &s), OK);
        EXPECT(api.terminate(c), OK);
        api.free_(c);
        if (i == warm) rss_warm = rss();
    }
    long rss_end = rss();
    printf("rss-warm %ld\nrss-end %ld\nrss-per-cycle %.1f\n", rss_warm, rss_end, (double)(rss_end - rss_warm) / n);
}

/* A state saved while stepping (t = 5 ms), restored after fmi2Terminate: the FMU steps again
   from 5 ms, and its last successful time says so; the step repeats the first run's bits. */
static void restore_after_terminate(void)
{
    Comp c = start("restore", 0.2);
    void *s = NULL;
    EXPECT(api.doStep(c, 0.0, 0.005, 1), OK);
    EXPECT(api.getState(c, &s), OK);
    EXPECT(api.doStep(c, 0.005, 0.005, 1), OK);
    double first = output(c);
    CHECK(last_successful(c) == 0.01);
    EXPECT(api.terminate(c), OK);
    EXPECT(api.doStep(c, 0.01, 0.005, 1), ERROR);
    EXPECT(api.setState(c, s), OK);
    CHECK(last_successful(c) == 0.005);
    EXPECT(api.doStep(c, 0.005, 0.005, 1), OK);
    CHECK(output(c) == first);
    CHECK(last_successful(c) == 0.01);
    EXPECT(api.freeState(c, &s), OK);
    EXPECT(api.terminate(c), OK);
    api.free_(c);
}

/* After a discarded step (a NaN input) the FMU is in stepFailed: doStep and set calls are
   refused, getters answer, and fmi2SetFMUstate or fmi2Reset bring it back. */
static void after_discard(void)
{
    const double nan = NAN, u = 0.2;
    Comp c = start("discard", 0.2);
    void *s = NULL;
    EXPECT(api.doStep(c, 0.0, 1e-3, 1), OK);
    EXPECT(api.getState(c, &s), OK);
    double y = output(c);
    EXPECT(api.setReal(c, &vr_in, 1, &nan), WARNING);
    EXPECT(api.doStep(c, 1e-3, 1e-3, 1), DISCARD);
    CHECK(last_successful(c) == 1e-3);
    EXPECT(api.doStep(c, 1e-3, 1e-3, 1), ERROR);
    EXPECT(api.setReal(c, &vr_in, 1, &u), ERROR);
    CHECK(output(c) == y);
    EXPECT(api.setState(c, s), OK);
    EXPECT(api.doStep(c, 1e-3, 1e-3, 1), OK);
    EXPECT(api.setReal(c, &vr_in, 1, &nan), WARNING);
    EXPECT(api.doStep(c, 2e-3, 1e-3, 1), DISCARD);
    EXPECT(api.reset(c), OK);
    EXPECT(api.setup(c, 0, 0.0, 0.0, 0, 0.0), OK);
    EXPECT(api.enter(c), OK);
    EXPECT(api.exit_(c), OK);
    EXPECT(api.doStep(c, 0.0, 1e-3, 1), OK);
    EXPECT(api.freeState(c, &s), OK);
    api.free_(c);
}

/* One step of 1e6 s: refused at once (a discard with the estimate logged), the FMU then goes
   on from a saved state with a normal step. */
static void huge_step(void)
{
    Comp c = start("huge", 0.1);
    void *s = NULL;
    EXPECT(api.getState(c, &s), OK);
    long before = errors_logged();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EXPECT(api.doStep(c, 0.0, 1e6, 1), DISCARD);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(errors_logged() > before);
    CHECK(last_successful(c) == 0.0);
    printf("refused-after-s %.3f\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    EXPECT(api.setState(c, s), OK);
    EXPECT(api.doStep(c, 0.0, 1e-3, 1), OK);
    EXPECT(api.freeState(c, &s), OK);
    api.free_(c);
}

/* Sizes and handles that are not a state's: each refused with a logged message, nothing made,
   and the next calls work as if they had not been made (no error left behind in Python). */
static void bad_size(void)
{
    Comp c = start("bad_size", 0.1);
    void *s = NULL, *d = NULL;
    size_t size = 0;
    char *buf = serialized(c, &s, &size);
    size_t sizes[] = {(size_t)-1, (size_t)1 << 62, 0, 1, size - 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        long before = errors_logged();
        EXPECT(api.deserialize(c, buf, sizes[i], &d), ERROR);
        CHECK(d == NULL);
        CHECK(errors_logged() > before);
        EXPECT(api.doStep(c, 1e-3 * i, 1e-3, 1), OK);
    }
    void *forged = buf;   /* a pointer the FMU never made */
    EXPECT(api.setState(c, forged), ERROR);
    EXPECT(api.freeState(c, &forged), ERROR);
    EXPECT(api.deserialize(c, buf, size, &d), OK);
    EXPECT(api.setState(c, d), OK);
    EXPECT(api.doStep(c, 0.0, 1e-3, 1), OK);
    EXPECT(api.freeState(c, &d), OK);
    EXPECT(api.freeState(c, &s), OK);
    EXPECT(api.setState(c, s), ERROR);   /* NULL after the free */
    free(buf);
    api.free_(c);
}

/* ------------------------------------------------------------------ main */

static int load(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 0;
    }
    int ok = 1;
#define SYM(field, name) ok &= (*(void **)(&api.field) = dlsym(lib, name)) != NULL;
    SYM(instantiate, "fmi2Instantiate") SYM(setup, "fmi2SetupExperiment") SYM(enter, "fmi2EnterInitializationMode")
    SYM(exit_, "fmi2ExitInitializationMode") SYM(terminate, "fmi2Terminate") SYM(reset, "fmi2Reset")
    SYM(free_, "fmi2FreeInstance") SYM(setReal, "fmi2SetReal") SYM(getReal, "fmi2GetReal") SYM(doStep, "fmi2DoStep")
    SYM(getState, "fmi2GetFMUstate") SYM(setState, "fmi2SetFMUstate") SYM(freeState, "fmi2FreeFMUstate")
    SYM(stateSize, "fmi2SerializedFMUstateSize") SYM(serialize, "fmi2SerializeFMUstate")
    SYM(deserialize, "fmi2DeSerializeFMUstate") SYM(getRealStatus, "fmi2GetRealStatus")
#undef SYM
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: c_hostile PATTERN BINARY RESOURCE_URI GUID VR_INPUT VR_OUTPUT [N]\n");
        return 2;
    }
    const char *pattern = argv[1];
    uri = argv[3];
    guid = argv[4];
    vr_in = (unsigned)atoi(argv[5]);
    vr_out = (unsigned)atoi(argv[6]);
    int n = argc > 7 ? atoi(argv[7]) : 100;
    if (!load(argv[2])) return 3;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(pattern, "exit-free") == 0) exit_free();
    else if (strcmp(pattern, "locking-logger") == 0) locking_logger(n);
    else if (strcmp(pattern, "deserialize") == 0) deserialize(n);
    else if (strcmp(pattern, "cycles") == 0) cycles(n);
    else if (strcmp(pattern, "restore-after-terminate") == 0) restore_after_terminate();
    else if (strcmp(pattern, "after-discard") == 0) after_discard();
    else if (strcmp(pattern, "huge-step") == 0) huge_step();
    else if (strcmp(pattern, "bad-size") == 0) bad_size();
    else return 2;
    printf("ok %s\n", pattern);
    return 0;
}
