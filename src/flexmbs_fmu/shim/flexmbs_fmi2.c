/*
 * flexmbs FMI 2.0 co-simulation front end (Linux).
 *
 * Compiled per FMU at build time (see flexmbs_fmu/shim.py) and shipped as the FMU's
 * binaries/linux64/<modelIdentifier>.so. It implements the fmi2* API itself and forwards the
 * valid calls to pythonfmu's library, shipped next to it as <modelIdentifier>.pythonfmu.so.
 * What it adds, all in C because it must hold before Python runs or when Python cannot run:
 *
 *  - the FMI 2.0 co-simulation state machine (FMI 2.0.4 standard, section 4.2.4; the allowed
 *    calls per state follow the Modelica Association's Reference-FMUs, src/fmi2Functions.c):
 *    a call out of sequence returns fmi2Error with a logged message naming the call and the
 *    state, and the instance stays as it was;
 *  - argument checks: GUID, fmuType (co-simulation only), the resource location (a file: URI
 *    of an existing folder holding the slave module), finite times and step sizes, value
 *    references in range and of the type of the call, NULL arrays;
 *  - a Python runtime for C hosts: when the process has none, it loads the libpython named in
 *    the record written at build time (resources/flexmbs_python.txt) with RTLD_GLOBAL and
 *    initialises it with that record's home and module paths, so no LD_PRELOAD, PYTHONHOME or
 *    PYTHONPATH is needed;
 *  - pythonfmu's library is loaded with RTLD_NODELETE and the Python runtime is never
 *    finalised: a host that dlcloses this binary unloads only this front end (see docs/fmu.md,
 *    "Why a front end": the exit abort);
 *  - errors and warnings are logged even when the host left logging off (pythonfmu drops every
 *    message then); info messages follow the host's loggingOn and categories.
 *
 * An instance whose Python side failed fatally is never handed back to pythonfmu's
 * fmi2FreeInstance: after a fatal error pythonfmu has already released its Python objects and
 * would release them a second time (heap corruption); that memory is leaked instead.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>

#include <Python.h>

#include "flexmbs_shim_config.h" /* SHIM_GUID, SHIM_VAR_TYPES, SHIM_PYTHONFMU_LIB, SHIM_RECORD */

/* ------------------------------------------------------------------ FMI 2.0 types (ABI) */

typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef char fmi2Char;
typedef const fmi2Char *fmi2String;
typedef char fmi2Byte;

typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime, fmi2Terminated } fmi2StatusKind;

typedef void (*fmi2CallbackLogger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
typedef void *(*fmi2CallbackAllocateMemory)(size_t, size_t);
typedef void (*fmi2CallbackFreeMemory)(void *);
typedef void (*fmi2StepFinished)(fmi2ComponentEnvironment, fmi2Status);

typedef struct {
    fmi2CallbackLogger logger;
    fmi2CallbackAllocateMemory allocateMemory;
    fmi2CallbackFreeMemory freeMemory;
    fmi2StepFinished stepFinished;
    fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

#define FMI2_TRUE 1
#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ states */

typedef enum {
    INSTANTIATED = 1 << 0,
    INITIALIZATION_MODE = 1 << 1,
    STEP_COMPLETE = 1 << 2,
    STEP_DISCARDED = 1 << 3, /* a step was refused; the FMU is still at its start (retry allowed) */
    TERMINATED = 1 << 4,
    ERROR_STATE = 1 << 5,
    FATAL_STATE = 1 << 6,
} State;

#define ANY_LIVE (INSTANTIATED | INITIALIZATION_MODE | STEP_COMPLETE | STEP_DISCARDED | TERMINATED | ERROR_STATE)
#define RUNNING (STEP_COMPLETE | STEP_DISCARDED)
#define MASK_SET (INSTANTIATED | INITIALIZATION_MODE | RUNNING)
#define MASK_GET (INITIALIZATION_MODE | RUNNING | TERMINATED | ERROR_STATE)
#define MASK_STATUS (RUNNING | TERMINATED)

static const char *state_name(State s)
{
    switch (s) {
        case INSTANTIATED: return "instantiated";
        case INITIALIZATION_MODE: return "initialization mode";
        case STEP_COMPLETE: return "step complete";
        case STEP_DISCARDED: return "step discarded";
        case TERMINATED: return "terminated";
        case ERROR_STATE: return "error";
        case FATAL_STATE: return "fatal";
    }
    return "unknown";
}

/* ------------------------------------------------------------------ pythonfmu's API */

typedef struct {
    fmi2Component (*instantiate)(fmi2String, fmi2Type, fmi2String, fmi2String, const fmi2CallbackFunctions *,
                                 fmi2Boolean, fmi2Boolean);
    void (*freeInstance)(fmi2Component);
    fmi2Status (*setupExperiment)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean, fmi2Real);
    fmi2Status (*enterInitializationMode)(fmi2Component);
    fmi2Status (*exitInitializationMode)(fmi2Component);
    fmi2Status (*terminate)(fmi2Component);
    fmi2Status (*reset)(fmi2Component);
    fmi2Status (*getReal)(fmi2Component, const fmi2ValueReference *, size_t, fmi2Real *);
    fmi2Status (*getInteger)(fmi2Component, const fmi2ValueReference *, size_t, fmi2Integer *);
    fmi2Status (*getBoolean)(fmi2Component, const fmi2ValueReference *, size_t, fmi2Boolean *);
    fmi2Status (*getString)(fmi2Component, const fmi2ValueReference *, size_t, fmi2String *);
    fmi2Status (*setReal)(fmi2Component, const fmi2ValueReference *, size_t, const fmi2Real *);
    fmi2Status (*setInteger)(fmi2Component, const fmi2ValueReference *, size_t, const fmi2Integer *);
    fmi2Status (*setBoolean)(fmi2Component, const fmi2ValueReference *, size_t, const fmi2Boolean *);
    fmi2Status (*setString)(fmi2Component, const fmi2ValueReference *, size_t, const fmi2String *);
    fmi2Status (*getFMUstate)(fmi2Component, fmi2FMUstate *);
    fmi2Status (*setFMUstate)(fmi2Component, fmi2FMUstate);
    fmi2Status (*freeFMUstate)(fmi2Component, fmi2FMUstate *);
    fmi2Status (*serializedFMUstateSize)(fmi2Component, fmi2FMUstate, size_t *);
    fmi2Status (*serializeFMUstate)(fmi2Component, fmi2FMUstate, fmi2Byte *, size_t);
    fmi2Status (*deSerializeFMUstate)(fmi2Component, const fmi2Byte *, size_t, fmi2FMUstate *);
    fmi2Status (*doStep)(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean);
    fmi2Status (*getStatus)(fmi2Component, fmi2StatusKind, fmi2Status *);
    fmi2Status (*getRealStatus)(fmi2Component, fmi2StatusKind, fmi2Real *);
    fmi2Status (*getIntegerStatus)(fmi2Component, fmi2StatusKind, fmi2Integer *);
    fmi2Status (*getBooleanStatus)(fmi2Component, fmi2StatusKind, fmi2Boolean *);
    fmi2Status (*getStringStatus)(fmi2Component, fmi2StatusKind, fmi2String *);
} Inner;

static Inner inner;
static int inner_loaded = 0;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------ the instance */

typedef struct {
    State state;
    char *name;
    fmi2CallbackFunctions host;   /* the host's callbacks */
    fmi2CallbackFunctions mine;   /* given to pythonfmu: its messages come through log_from_inner */
    int logging_on;
    size_t n_categories;
    char **categories;
    fmi2Component inner;
    fmi2Status worst;             /* the worst status pythonfmu logged during the current call */
} Instance;

static int category_on(const Instance *in, fmi2String category)
{
    if (in->n_categories == 0) return 1;
    for (size_t i = 0; i < in->n_categories; i++)
        if (category && strcmp(category, in->categories[i]) == 0) return 1;
    return 0;
}

/* Warnings and worse always reach the host; information only with logging on. The FMI logger
   takes a printf format: a '%' of the text (a path, a URI) is doubled so that it cannot read
   arguments that were never passed. */
static void emit(const Instance *in, fmi2Status status, fmi2String category, fmi2String message)
{
    if (in->host.logger == NULL || message == NULL) return;
    if (status < fmi2Warning && !(in->logging_on && category_on(in, category))) return;
    if (!strchr(message, '%')) {
        in->host.logger(in->host.componentEnvironment, in->name, status, category, message);
        return;
    }
    size_t n = strlen(message);
    char *safe = malloc(2 * n + 1);
    if (!safe) return;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (message[i] == '%') safe[k++] = '%';
        safe[k++] = message[i];
    }
    safe[k] = '\0';
    in->host.logger(in->host.componentEnvironment, in->name, status, category, safe);
    free(safe);
}

static void logf_(const Instance *in, fmi2Status status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *cat = status >= fmi2Fatal ? "logStatusFatal" : status == fmi2Error ? "logStatusError"
                      : status == fmi2Discard ? "logStatusDiscard" : status == fmi2Warning ? "logStatusWarning"
                      : "logAll";
    emit(in, status, cat, msg);
}

static void log_from_inner(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status, fmi2String category,
                           fmi2String message, ...)
{
    (void)name;
    Instance *in = env;
    if (status > in->worst) in->worst = status;
    emit(in, status, category, message);
}

/* The call is allowed in the instance's state; else log and refuse. */
static int allowed(Instance *in, const char *call, int mask)
{
    if (in->state & mask) return 1;
    logf_(in, fmi2Error, "%s is not allowed in state '%s'; the call was refused and the FMU is unchanged", call,
          state_name(in->state));
    return 0;
}

/* The status of a forwarded call also sets the state: fatal ends the instance. */
static fmi2Status after(Instance *in, fmi2Status status)
{
    if (status == fmi2Fatal) in->state = FATAL_STATE;
    return status;
}

/* pythonfmu returns fmi2OK from a call whose Python side refused it with a logged error (a
   value refused, a state not applied): the call's status is then `to`. */
static fmi2Status escalate(const Instance *in, fmi2Status status, fmi2Status to)
{
    return (status < to && in->worst >= fmi2Error) ? to : status;
}

/* Forward one call to pythonfmu, noting what it logs. */
#define FORWARD(in, expr) ((in)->worst = fmi2OK, after((in), (expr)))

/* ------------------------------------------------------------------ loading */

static const char *this_folder(char *buf, size_t n)
{
    Dl_info info;
    if (!dladdr((void *)&this_folder, &info) || !info.dli_fname) return NULL;
    snprintf(buf, n, "%s", info.dli_fname);
    char *slash = strrchr(buf, '/');
    if (!slash) return NULL;
    *slash = '\0';
    return buf;
}

/* resource location URI -> folder path (file:///p, file:/p, file://localhost/p; %XX decoded).
   Returns 0 with a reason in `why` when it is not a local folder. */
static int resource_folder(fmi2String uri, char *out, size_t n, char *why, size_t nwhy)
{
    if (uri == NULL || uri[0] == '\0') {
        snprintf(why, nwhy, "no resource location was given (NULL or empty)");
        return 0;
    }
    const char *p;
    if (strncmp(uri, "file://localhost/", 17) == 0) p = uri + 16;
    else if (strncmp(uri, "file:///", 8) == 0) p = uri + 7;
    else if (strncmp(uri, "file:/", 6) == 0 && uri[6] != '/') p = uri + 5;
    else {
        snprintf(why, nwhy, "the resource location '%.300s' is not a file: URI of a local folder", uri);
        return 0;
    }
    size_t k = 0;
    for (; *p && k + 1 < n; p++) {
        if (*p == '%' && p[1] && p[2]) {
            char hex[3] = {p[1], p[2], 0};
            char *end;
            long v = strtol(hex, &end, 16);
            if (*end == '\0' && v > 0) {
                out[k++] = (char)v;
                p += 2;
                continue;
            }
        }
        out[k++] = *p;
    }
    out[k] = '\0';
    while (k > 1 && out[k - 1] == '/') out[--k] = '\0';
    struct stat st;
    if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, nwhy, "the resource location '%.300s' is not an existing folder", uri);
        return 0;
    }
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/slavemodule.txt", out);
    if (stat(probe, &st) != 0) {
        snprintf(why, nwhy, "the resource folder '%.300s' holds no slavemodule.txt: it is not this FMU's", out);
        return 0;
    }
    return 1;
}

/* Python's C API functions used here, looked up at run time (the host may have no libpython
   loaded when this library is loaded). */
typedef struct {
    int (*IsInitialized)(void);
    void (*InitConfig)(PyConfig *);
    PyStatus (*SetBytesString)(PyConfig *, wchar_t **, const char *);
    PyStatus (*InitializeFromConfig)(const PyConfig *);
    int (*StatusException)(PyStatus);
    void (*ConfigClear)(PyConfig *);
    PyGILState_STATE (*GILEnsure)(void);
    void (*GILRelease)(PyGILState_STATE);
    int (*RunSimpleString)(const char *);
    PyThreadState *(*SaveThread)(void);
    int (*FinalizeEx)(void);
} PyApi;

static PyApi started;   /* the runtime this library started (C hosts), finalised at exit */

/* At process exit, before the libraries' own destructors run: finalise the Python runtime this
   library started, so that extension modules (numpy, scipy, llvmlite) shut down while their
   libraries are still intact; without it glibc aborts in libgfortran's exit handler ("free():
   corrupted unsorted chunks", every run of a C host). */
static void finalize_started(void)
{
    if (!started.FinalizeEx) return;
    started.GILEnsure();
    started.FinalizeEx();
}

static int lookup(void *handle, PyApi *api)
{
    void *h = handle ? handle : RTLD_DEFAULT;
    api->IsInitialized = (int (*)(void))dlsym(h, "Py_IsInitialized");
    api->InitConfig = (void (*)(PyConfig *))dlsym(h, "PyConfig_InitPythonConfig");
    api->SetBytesString = (PyStatus(*)(PyConfig *, wchar_t **, const char *))dlsym(h, "PyConfig_SetBytesString");
    api->InitializeFromConfig = (PyStatus(*)(const PyConfig *))dlsym(h, "Py_InitializeFromConfig");
    api->StatusException = (int (*)(PyStatus))dlsym(h, "PyStatus_Exception");
    api->ConfigClear = (void (*)(PyConfig *))dlsym(h, "PyConfig_Clear");
    api->GILEnsure = (PyGILState_STATE(*)(void))dlsym(h, "PyGILState_Ensure");
    api->GILRelease = (void (*)(PyGILState_STATE))dlsym(h, "PyGILState_Release");
    api->RunSimpleString = (int (*)(const char *))dlsym(h, "PyRun_SimpleString");
    api->SaveThread = (PyThreadState * (*)(void)) dlsym(h, "PyEval_SaveThread");
    api->FinalizeEx = (int (*)(void))dlsym(h, "Py_FinalizeEx");
    return api->IsInitialized && api->InitConfig && api->SetBytesString && api->InitializeFromConfig &&
           api->StatusException && api->ConfigClear && api->GILEnsure && api->GILRelease && api->RunSimpleString &&
           api->SaveThread && api->FinalizeEx;
}

/* A Python string literal of s (for the module paths handed to site.addsitedir). */
static void py_literal(char *out, size_t n, const char *s)
{
    size_t k = 0;
    if (k + 1 < n) out[k++] = '\'';
    for (; *s && k + 5 < n; s++) {
        if (*s == '\\' || *s == '\'') out[k++] = '\\';
        out[k++] = *s;
    }
    if (k + 1 < n) out[k++] = '\'';
    out[k] = '\0';
}

/* Make sure a Python runtime runs in this process: the host's own (a Python host), or the one
   named in the build record (a C host). Returns 0 with the reason in `why`. */
static int ensure_python(const char *resources, char *why, size_t nwhy)
{
    PyApi api;
    if (lookup(NULL, &api) && api.IsInitialized()) return 1;   /* a Python host */

    char record[4200];
    snprintf(record, sizeof record, "%s/%s", resources, SHIM_RECORD);
    FILE *f = fopen(record, "r");
    if (!f) {
        snprintf(why, nwhy, "this process runs no Python and the record of the interpreter the FMU was built with "
                 "(%.300s) cannot be read", record);
        return 0;
    }
    char line[4200], home[4200] = "", lib[4200] = "", exe[4200] = "";
    char code[65536];
    size_t used = (size_t)snprintf(code, sizeof code, "import site, sys\nfor p in [");
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strncmp(line, "libpython=", 10) == 0) snprintf(lib, sizeof lib, "%s", line + 10);
        else if (strncmp(line, "home=", 5) == 0) snprintf(home, sizeof home, "%s", line + 5);
        else if (strncmp(line, "executable=", 11) == 0) snprintf(exe, sizeof exe, "%s", line + 11);
        else if (strncmp(line, "path=", 5) == 0 && used + 2 * strlen(line) + 16 < sizeof code) {
            char lit[8400];
            py_literal(lit, sizeof lit, line + 5);
            used += (size_t)snprintf(code + used, sizeof code - used, "%s, ", lit);
        }
    }
    fclose(f);
    snprintf(code + used, sizeof code - used, "]:\n    site.addsitedir(p)\n");
    if (!lib[0]) {
        snprintf(why, nwhy, "the record %.300s names no libpython", record);
        return 0;
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    if (!h) {
        snprintf(why, nwhy, "this process runs no Python, and the interpreter library the FMU was built with cannot "
                 "be loaded: %.400s (record: %.300s)", dlerror(), record);
        return 0;
    }
    if (!lookup(h, &api)) {
        snprintf(why, nwhy, "%.300s lacks Python's initialisation API (Python >= 3.8 is needed)", lib);
        return 0;
    }
    if (api.IsInitialized()) return 1;
    PyConfig config;
    api.InitConfig(&config);
    config.install_signal_handlers = 0;   /* the host owns its signals */
    config.parse_argv = 0;
    /* the interpreter the FMU was built with: its executable (so that a virtual environment's
       pyvenv.cfg gives the same sys.prefix and site-packages), else its home */
    PyStatus st = exe[0] ? api.SetBytesString(&config, &config.program_name, exe)
                         : api.SetBytesString(&config, &config.home, home);
    if (exe[0] && !api.StatusException(st)) st = api.SetBytesString(&config, &config.executable, exe);
    if (!api.StatusException(st)) st = api.InitializeFromConfig(&config);
    api.ConfigClear(&config);
    if (api.StatusException(st)) {
        snprintf(why, nwhy, "the Python runtime %.300s (home %.300s) did not start: %.300s", lib, home,
                 st.err_msg ? st.err_msg : "no reason given");
        return 0;
    }
    int rc = api.RunSimpleString(code);
    api.SaveThread();   /* release the GIL: pythonfmu takes it per call, from any thread */
    /* this library must then stay loaded until exit, where it finalises the runtime */
    Dl_info self;
    if (dladdr((void *)&finalize_started, &self) && self.dli_fname &&
        dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) {
        started = api;
        atexit(finalize_started);
    }
    if (rc != 0) {
        snprintf(why, nwhy, "the module paths of the record %.300s could not be added", record);
        return 0;
    }
    return 1;
}

static int load_inner(char *why, size_t nwhy)
{
    if (inner_loaded) return 1;
    char folder[4096], path[4400];
    if (!this_folder(folder, sizeof folder)) {
        snprintf(why, nwhy, "cannot find the folder of this library");
        return 0;
    }
    snprintf(path, sizeof path, "%s/%s", folder, SHIM_PYTHONFMU_LIB);
    /* never unloaded: its Python objects and threads outlive any dlclose of this front end */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        snprintf(why, nwhy, "cannot load %.300s: %.400s", path, dlerror());
        return 0;
    }
#define GET(field, sym)                                                                 \
    *(void **)(&inner.field) = dlsym(h, sym);                                            \
    if (!inner.field) {                                                                  \
        snprintf(why, nwhy, "%.300s lacks %s", path, sym);                               \
        return 0;                                                                        \
    }
    GET(instantiate, "fmi2Instantiate") GET(freeInstance, "fmi2FreeInstance")
    GET(setupExperiment, "fmi2SetupExperiment") GET(enterInitializationMode, "fmi2EnterInitializationMode")
    GET(exitInitializationMode, "fmi2ExitInitializationMode") GET(terminate, "fmi2Terminate")
    GET(reset, "fmi2Reset") GET(getReal, "fmi2GetReal") GET(getInteger, "fmi2GetInteger")
    GET(getBoolean, "fmi2GetBoolean") GET(getString, "fmi2GetString") GET(setReal, "fmi2SetReal")
    GET(setInteger, "fmi2SetInteger") GET(setBoolean, "fmi2SetBoolean") GET(setString, "fmi2SetString")
    GET(getFMUstate, "fmi2GetFMUstate") GET(setFMUstate, "fmi2SetFMUstate") GET(freeFMUstate, "fmi2FreeFMUstate")
    GET(serializedFMUstateSize, "fmi2SerializedFMUstateSize") GET(serializeFMUstate, "fmi2SerializeFMUstate")
    GET(deSerializeFMUstate, "fmi2DeSerializeFMUstate") GET(doStep, "fmi2DoStep") GET(getStatus, "fmi2GetStatus")
    GET(getRealStatus, "fmi2GetRealStatus") GET(getIntegerStatus, "fmi2GetIntegerStatus")
    GET(getBooleanStatus, "fmi2GetBooleanStatus") GET(getStringStatus, "fmi2GetStringStatus")
#undef GET
    inner_loaded = 1;
    return 1;
}

/* ------------------------------------------------------------------ FMI API */

EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

static void free_instance(Instance *in)
{
    if (!in) return;
    for (size_t i = 0; i < in->n_categories; i++) free(in->categories[i]);
    free(in->categories);
    free(in->name);
    free(in);
}

EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                                     fmi2String fmuResourceLocation, const fmi2CallbackFunctions *functions,
                                     fmi2Boolean visible, fmi2Boolean loggingOn)
{
    (void)visible;
    Instance *in = calloc(1, sizeof *in);
    if (!in) return NULL;
    in->name = strdup(instanceName ? instanceName : "");
    if (functions) in->host = *functions;
    in->logging_on = loggingOn == FMI2_TRUE;
    in->state = INSTANTIATED;
    char why[1200], folder[4096];
    if (!functions || !functions->logger) {
        free_instance(in);   /* no logger to say why: the FMI standard requires one */
        return NULL;
    }
    if (!instanceName || !instanceName[0]) {
        logf_(in, fmi2Error, "fmi2Instantiate: the instance name is missing");
        goto fail;
    }
    if (fmuType != fmi2CoSimulation) {
        logf_(in, fmi2Error, "fmi2Instantiate: this FMU supports co-simulation only; Model Exchange (fmuType %d) "
              "was requested", (int)fmuType);
        goto fail;
    }
    if (!fmuGUID || strcmp(fmuGUID, SHIM_GUID) != 0) {
        logf_(in, fmi2Error, "fmi2Instantiate: GUID '%.200s' does not match this FMU's '%s' (the modelDescription.xml "
              "belongs to another build)", fmuGUID ? fmuGUID : "(NULL)", SHIM_GUID);
        goto fail;
    }
    if (!resource_folder(fmuResourceLocation, folder, sizeof folder, why, sizeof why)) {
        logf_(in, fmi2Error, "fmi2Instantiate: %s", why);
        goto fail;
    }
    pthread_mutex_lock(&load_lock);
    int ready = ensure_python(folder, why, sizeof why) && load_inner(why, sizeof why);
    pthread_mutex_unlock(&load_lock);
    if (!ready) {
        logf_(in, fmi2Error, "fmi2Instantiate: %s", why);
        goto fail;
    }
    in->mine = in->host;
    in->mine.logger = log_from_inner;
    in->mine.componentEnvironment = in;
    char uri[4200];
    snprintf(uri, sizeof uri, "file://%s", folder);
    /* pythonfmu logs only with logging on: always on, filtered in emit() */
    in->inner = inner.instantiate(instanceName, fmuType, fmuGUID, uri, &in->mine, visible, FMI2_TRUE);
    if (!in->inner) {
        logf_(in, fmi2Error, "fmi2Instantiate: the Python slave could not be created (see the messages above)");
        goto fail;
    }
    return in;
fail:
    free_instance(in);
    return NULL;
}

EXPORT void fmi2FreeInstance(fmi2Component c)
{
    Instance *in = c;
    if (!in) return;
    if (in->inner && in->state != FATAL_STATE) inner.freeInstance(in->inner);
    free_instance(in);
}

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                                      const fmi2String categories[])
{
    Instance *in = c;
    if (!in) return fmi2Error;
    if (nCategories > 0 && !categories) {
        logf_(in, fmi2Error, "fmi2SetDebugLogging: %zu categories but no array", nCategories);
        return fmi2Error;
    }
    for (size_t i = 0; i < in->n_categories; i++) free(in->categories[i]);
    free(in->categories);
    in->categories = nCategories ? calloc(nCategories, sizeof(char *)) : NULL;
    in->n_categories = in->categories ? nCategories : 0;
    for (size_t i = 0; i < in->n_categories; i++) in->categories[i] = strdup(categories[i] ? categories[i] : "");
    in->logging_on = loggingOn == FMI2_TRUE;
    return fmi2OK;
}

#define ENTER(call, mask)                                   \
    Instance *in = c;                                       \
    if (!in) return fmi2Error;                              \
    if (!allowed(in, call, mask)) return fmi2Error;

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                                      fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime)
{
    ENTER("fmi2SetupExperiment", INSTANTIATED)
    if (!isfinite(startTime)) {
        logf_(in, fmi2Error, "fmi2SetupExperiment: the start time %g s is not finite; refused", startTime);
        return fmi2Error;
    }
    if (stopTimeDefined && !(isfinite(stopTime) && stopTime >= startTime)) {
        logf_(in, fmi2Error, "fmi2SetupExperiment: the stop time %g s is not a finite time at or after the start "
              "time %g s; refused", stopTime, startTime);
        return fmi2Error;
    }
    if (toleranceDefined && !(isfinite(tolerance) && tolerance > 0)) {
        logf_(in, fmi2Error, "fmi2SetupExperiment: the tolerance %g is not a finite positive number; refused",
              tolerance);
        return fmi2Error;
    }
    return FORWARD(in, inner.setupExperiment(in->inner, toleranceDefined, tolerance, startTime, stopTimeDefined,
                                           stopTime));
}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{
    ENTER("fmi2EnterInitializationMode", INSTANTIATED)
    fmi2Status s = FORWARD(in, inner.enterInitializationMode(in->inner));
    if (s <= fmi2Warning) in->state = INITIALIZATION_MODE;
    return s;
}

EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{
    ENTER("fmi2ExitInitializationMode", INITIALIZATION_MODE)
    fmi2Status s = FORWARD(in, inner.exitInitializationMode(in->inner));
    if (s <= fmi2Warning) in->state = STEP_COMPLETE;
    return s;
}

EXPORT fmi2Status fmi2Terminate(fmi2Component c)
{
    ENTER("fmi2Terminate", RUNNING)
    fmi2Status s = FORWARD(in, inner.terminate(in->inner));
    if (s <= fmi2Warning) in->state = TERMINATED;
    return s;
}

EXPORT fmi2Status fmi2Reset(fmi2Component c)
{
    ENTER("fmi2Reset", ANY_LIVE)
    fmi2Status s = FORWARD(in, inner.reset(in->inner));
    if (s <= fmi2Warning) in->state = INSTANTIATED;
    return s;
}

/* Every value reference exists and is of type `type` (a letter of SHIM_VAR_TYPES). */
static int refs_ok(Instance *in, const char *call, const fmi2ValueReference vr[], size_t nvr, const void *values,
                   char type)
{
    static const char types[] = SHIM_VAR_TYPES;
    const size_t n = sizeof types - 1;
    if (nvr == 0) return 1;
    if (!vr || !values) {
        logf_(in, fmi2Error, "%s: %zu value references but a NULL array; refused", call, nvr);
        return 0;
    }
    for (size_t i = 0; i < nvr; i++) {
        if (vr[i] >= n) {
            logf_(in, fmi2Error, "%s: value reference %u does not exist (this FMU has 0 ... %zu); nothing was %s",
                  call, vr[i], n - 1, strncmp(call, "fmi2Get", 7) == 0 ? "read" : "set");
            return 0;
        }
        if (types[vr[i]] != type) {
            logf_(in, fmi2Error, "%s: value reference %u is not of this type (it is a%s variable); nothing was %s",
                  call, vr[i], types[vr[i]] == 'S' ? " String" : types[vr[i]] == 'R' ? " Real" : "n Integer/Boolean",
                  strncmp(call, "fmi2Get", 7) == 0 ? "read" : "set");
            return 0;
        }
    }
    return 1;
}

#define ACCESS(name, mask, type, letter, innerfn, refused)                                                     \
    EXPORT fmi2Status name(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, type value)      \
    {                                                                                                   \
        ENTER(#name, mask)                                                                              \
        if (!refs_ok(in, #name, vr, nvr, (const void *)value, letter)) return fmi2Error;                \
        if (nvr == 0) return fmi2OK;                                                                    \
        return escalate(in, FORWARD(in, inner.innerfn(in->inner, vr, nvr, value)), refused);            \
    }

ACCESS(fmi2GetReal, MASK_GET, fmi2Real *, 'R', getReal, fmi2Error)
ACCESS(fmi2GetInteger, MASK_GET, fmi2Integer *, 'I', getInteger, fmi2Error)
ACCESS(fmi2GetBoolean, MASK_GET, fmi2Boolean *, 'B', getBoolean, fmi2Error)
ACCESS(fmi2GetString, MASK_GET, fmi2String *, 'S', getString, fmi2Error)
ACCESS(fmi2SetReal, MASK_SET, const fmi2Real *, 'R', setReal, fmi2Warning)
ACCESS(fmi2SetInteger, MASK_SET, const fmi2Integer *, 'I', setInteger, fmi2Warning)
ACCESS(fmi2SetBoolean, MASK_SET, const fmi2Boolean *, 'B', setBoolean, fmi2Warning)
ACCESS(fmi2SetString, MASK_SET, const fmi2String *, 'S', setString, fmi2Warning)

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state)
{
    ENTER("fmi2GetFMUstate", ANY_LIVE)
    if (!state) {
        logf_(in, fmi2Error, "fmi2GetFMUstate: NULL state pointer; refused");
        return fmi2Error;
    }
    return escalate(in, FORWARD(in, inner.getFMUstate(in->inner, state)), fmi2Error);
}

EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state)
{
    ENTER("fmi2SetFMUstate", ANY_LIVE)
    if (!state) {
        logf_(in, fmi2Error, "fmi2SetFMUstate: NULL state; refused, the FMU is unchanged");
        return fmi2Error;
    }
    return escalate(in, FORWARD(in, inner.setFMUstate(in->inner, state)), fmi2Error);
}

EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state)
{
    ENTER("fmi2FreeFMUstate", ANY_LIVE)
    if (!state || !*state) return fmi2OK;
    fmi2Status s = FORWARD(in, inner.freeFMUstate(in->inner, state));
    *state = NULL;
    return s;
}

EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t *size)
{
    ENTER("fmi2SerializedFMUstateSize", ANY_LIVE)
    if (!state || !size) {
        logf_(in, fmi2Error, "fmi2SerializedFMUstateSize: NULL state or size; refused");
        return fmi2Error;
    }
    return escalate(in, FORWARD(in, inner.serializedFMUstateSize(in->inner, state, size)), fmi2Error);
}

EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[], size_t size)
{
    ENTER("fmi2SerializeFMUstate", ANY_LIVE)
    size_t need = 0;
    if (!state || !bytes) {
        logf_(in, fmi2Error, "fmi2SerializeFMUstate: NULL state or buffer; refused");
        return fmi2Error;
    }
    fmi2Status s = FORWARD(in, inner.serializedFMUstateSize(in->inner, state, &need));
    if (s > fmi2Warning) return s;
    if (size < need) {
        logf_(in, fmi2Error, "fmi2SerializeFMUstate: the buffer holds %zu bytes, the state needs %zu; refused", size,
              need);
        return fmi2Error;
    }
    return escalate(in, FORWARD(in, inner.serializeFMUstate(in->inner, state, bytes, need)), fmi2Error);
}

EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size, fmi2FMUstate *state)
{
    ENTER("fmi2DeSerializeFMUstate", ANY_LIVE)
    if (!bytes || !state) {
        logf_(in, fmi2Error, "fmi2DeSerializeFMUstate: NULL bytes or state pointer; refused");
        return fmi2Error;
    }
    return escalate(in, FORWARD(in, inner.deSerializeFMUstate(in->inner, bytes, size, state)), fmi2Error);
}

EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu,
                                               const fmi2ValueReference z[], size_t nz, const fmi2Real dv[],
                                               fmi2Real dz[])
{
    (void)u, (void)nu, (void)z, (void)nz, (void)dv, (void)dz;
    Instance *in = c;
    if (in) logf_(in, fmi2Error, "fmi2GetDirectionalDerivative is not supported by this FMU "
                  "(providesDirectionalDerivative is false)");
    return fmi2Error;
}

EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                              const fmi2Integer order[], const fmi2Real value[])
{
    (void)vr, (void)nvr, (void)order, (void)value;
    Instance *in = c;
    if (in) logf_(in, fmi2Error, "fmi2SetRealInputDerivatives is not supported by this FMU "
                  "(canInterpolateInputs is false)");
    return fmi2Error;
}

EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                               const fmi2Integer order[], fmi2Real value[])
{
    (void)vr, (void)nvr, (void)order, (void)value;
    Instance *in = c;
    if (in) logf_(in, fmi2Error, "fmi2GetRealOutputDerivatives is not supported by this FMU "
                  "(maxOutputDerivativeOrder is 0)");
    return fmi2Error;
}

EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint, fmi2Real communicationStepSize,
                             fmi2Boolean noSetFMUStatePriorToCurrentPoint)
{
    ENTER("fmi2DoStep", RUNNING)
    if (!isfinite(currentCommunicationPoint) || !isfinite(communicationStepSize) || communicationStepSize < 0) {
        logf_(in, fmi2Error, "fmi2DoStep: the step from t = %g s by %g s is not a finite time and a finite "
              "non-negative step; refused, the FMU is unchanged", currentCommunicationPoint, communicationStepSize);
        return fmi2Error;
    }
    fmi2Status s = FORWARD(in, inner.doStep(in->inner, currentCommunicationPoint, communicationStepSize,
                                          noSetFMUStatePriorToCurrentPoint));
    if (s <= fmi2Warning) in->state = STEP_COMPLETE;
    else if (s == fmi2Discard) in->state = STEP_DISCARDED;
    else if (s == fmi2Error) in->state = ERROR_STATE;
    return s;
}

EXPORT fmi2Status fmi2CancelStep(fmi2Component c)
{
    Instance *in = c;
    if (in) logf_(in, fmi2Error, "fmi2CancelStep: this FMU steps synchronously (canRunAsynchronuously is false)");
    return fmi2Error;
}

#define STATUS(name, type, innerfn)                                                         \
    EXPORT fmi2Status name(fmi2Component c, const fmi2StatusKind s, type *value)              \
    {                                                                                       \
        ENTER(#name, MASK_STATUS)                                                           \
        if (!value) {                                                                       \
            logf_(in, fmi2Error, "%s: NULL value pointer; refused", #name);                 \
            return fmi2Error;                                                               \
        }                                                                                   \
        return FORWARD(in, inner.innerfn(in->inner, s, value));                              \
    }

STATUS(fmi2GetStatus, fmi2Status, getStatus)
STATUS(fmi2GetRealStatus, fmi2Real, getRealStatus)
STATUS(fmi2GetIntegerStatus, fmi2Integer, getIntegerStatus)
STATUS(fmi2GetBooleanStatus, fmi2Boolean, getBooleanStatus)
STATUS(fmi2GetStringStatus, fmi2String, getStringStatus)
