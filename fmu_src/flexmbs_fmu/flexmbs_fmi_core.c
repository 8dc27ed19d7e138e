/*
 * flexmbs FMU front ends: the part both FMI versions share (flexmbs_fmi_core.h says what it
 * is). Compiled per FMU with the front end of its FMI version (flexmbs/fmi/frontend.py).
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wchar.h>
#include <pthread.h>

#include "flexmbs_fmi_core.h"

/* Largest serialised state accepted [bytes]: far above any this FMU writes (JSON text; the
   implicit method's two n x n matrices reach it near n = 3000 coordinates), and below
   PY_SSIZE_T_MAX, so that a size that is not a state's is refused before anything is read. */
#define MAX_STATE_BYTES ((size_t)1 << 30)

static const State STATES[] = {INSTANTIATED, INITIALIZATION_MODE, STEP_COMPLETE, STEP_FAILED, TERMINATED, ERROR_STATE};

/* A state's name in a serialised state (the FMI 2.0 front end's names, in both versions). */
static const char *state_name(State s)
{
    switch (s) {
        case INSTANTIATED: return "instantiated";
        case INITIALIZATION_MODE: return "initialization mode";
        case STEP_COMPLETE: return "step complete";
        case STEP_FAILED: return "step failed";
        case TERMINATED: return "terminated";
        case ERROR_STATE: return "error";
        case FATAL_STATE: return "fatal";
    }
    return "unknown";
}

/* The live state of a name (as state_name writes it), or 0. */
static State state_of_name(const char *name)
{
    for (size_t i = 0; name && i < sizeof STATES / sizeof STATES[0]; i++)
        if (strcmp(name, state_name(STATES[i])) == 0) return STATES[i];
    return 0;
}

/* A state as the instance's FMI version names it, for messages. */
static const char *shown(const Instance *in, State s)
{
    for (int bit = 0; bit < N_STATES; bit++)
        if (s == (State)(1 << bit)) return in->flavour->states[bit];
    return "unknown";
}


/* ------------------------------------------------------------------ Python's C API */

/* Python's C API functions used here, looked up at run time: the host may have no libpython
   loaded when this library is loaded, and a host may load it with RTLD_NOW. */
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
    /* objects */
    PyObject *(*ImportModule)(const char *);
    PyObject *(*GetModule)(PyObject *);
    PyObject *(*GetModuleDict)(void);
    int (*DictSetItemString)(PyObject *, const char *, PyObject *);
    int (*DictDelItemString)(PyObject *, const char *);
    PyObject *(*GetAttrString)(PyObject *, const char *);
    PyObject *(*CallObject)(PyObject *, PyObject *);
    PyObject *(*Call)(PyObject *, PyObject *, PyObject *);
    PyObject *(*VaBuildValue)(const char *, va_list);
    void (*IncRef)(PyObject *);
    void (*DecRef)(PyObject *);
    int (*IsTrue)(PyObject *);
    PyObject *(*Str)(PyObject *);
    const char *(*AsUTF8)(PyObject *);
    PyObject *(*UnicodeFromString)(const char *);
    PyObject *(*ErrOccurred)(void);
    void (*ErrFetch)(PyObject **, PyObject **, PyObject **);
    void (*ErrClear)(void);
    void (*ErrRestore)(PyObject *, PyObject *, PyObject *);
    PyObject *(*ListNew)(Py_ssize_t);
    Py_ssize_t (*ListSize)(PyObject *);
    PyObject *(*ListGetItem)(PyObject *, Py_ssize_t);
    int (*ListSetItem)(PyObject *, Py_ssize_t, PyObject *);
    int (*ListInsert)(PyObject *, Py_ssize_t, PyObject *);
    int (*SequenceContains)(PyObject *, PyObject *);
    PyObject *(*TupleGetItem)(PyObject *, Py_ssize_t);
    Py_ssize_t (*TupleSize)(PyObject *);
    PyObject *(*LongFromLong)(long);
    long (*LongAsLong)(PyObject *);
    void *(*LongAsVoidPtr)(PyObject *);
    PyObject *(*FloatFromDouble)(double);
    double (*FloatAsDouble)(PyObject *);
    PyObject *(*BoolFromLong)(long);
    PyObject *(*BytesFromStringAndSize)(const char *, Py_ssize_t);
    int (*BytesAsStringAndSize)(PyObject *, char **, Py_ssize_t *);
    int (*GetBuffer)(PyObject *, Py_buffer *, int);
    void (*BufferRelease)(Py_buffer *);
} PyApi;

static PyApi py;           /* filled once a runtime runs in this process */
static PyApi started;      /* the runtime this library started (C hosts), finalised at exit */
static volatile int finalized;   /* set when finalize_started runs: no Python call after it */

static int lookup(void *handle, PyApi *api)
{
    void *h = handle ? handle : RTLD_DEFAULT;
    int ok = 1;
#define SYM(field, name) ok &= (*(void **)(&api->field) = dlsym(h, name)) != NULL;
    SYM(IsInitialized, "Py_IsInitialized") SYM(InitConfig, "PyConfig_InitPythonConfig")
    SYM(SetBytesString, "PyConfig_SetBytesString") SYM(InitializeFromConfig, "Py_InitializeFromConfig")
    SYM(StatusException, "PyStatus_Exception") SYM(ConfigClear, "PyConfig_Clear")
    SYM(GILEnsure, "PyGILState_Ensure") SYM(GILRelease, "PyGILState_Release")
    SYM(RunSimpleString, "PyRun_SimpleString") SYM(SaveThread, "PyEval_SaveThread") SYM(FinalizeEx, "Py_FinalizeEx")
    SYM(ImportModule, "PyImport_ImportModule") SYM(GetAttrString, "PyObject_GetAttrString")
    SYM(GetModule, "PyImport_GetModule") SYM(GetModuleDict, "PyImport_GetModuleDict")
    SYM(DictSetItemString, "PyDict_SetItemString") SYM(DictDelItemString, "PyDict_DelItemString")
    SYM(CallObject, "PyObject_CallObject") SYM(Call, "PyObject_Call") SYM(VaBuildValue, "Py_VaBuildValue")
    SYM(IncRef, "Py_IncRef") SYM(DecRef, "Py_DecRef") SYM(IsTrue, "PyObject_IsTrue") SYM(Str, "PyObject_Str")
    SYM(AsUTF8, "PyUnicode_AsUTF8") SYM(UnicodeFromString, "PyUnicode_FromString")
    SYM(ErrOccurred, "PyErr_Occurred") SYM(ErrFetch, "PyErr_Fetch") SYM(ErrClear, "PyErr_Clear") SYM(ErrRestore, "PyErr_Restore")
    SYM(ListNew, "PyList_New") SYM(ListSize, "PyList_Size") SYM(ListGetItem, "PyList_GetItem")
    SYM(ListSetItem, "PyList_SetItem") SYM(ListInsert, "PyList_Insert") SYM(SequenceContains, "PySequence_Contains")
    SYM(TupleGetItem, "PyTuple_GetItem") SYM(TupleSize, "PyTuple_Size")
    SYM(LongFromLong, "PyLong_FromLong") SYM(LongAsLong, "PyLong_AsLong") SYM(LongAsVoidPtr, "PyLong_AsVoidPtr")
    SYM(FloatFromDouble, "PyFloat_FromDouble") SYM(FloatAsDouble, "PyFloat_AsDouble")
    SYM(BoolFromLong, "PyBool_FromLong") SYM(BytesFromStringAndSize, "PyBytes_FromStringAndSize")
    SYM(BytesAsStringAndSize, "PyBytes_AsStringAndSize")
    SYM(GetBuffer, "PyObject_GetBuffer") SYM(BufferRelease, "PyBuffer_Release")
#undef SYM
    return ok;
}

/* At process exit, before the libraries' own destructors run: finalise the Python runtime this
   library started, so that extension modules (numpy, scipy, llvmlite) shut down while their
   libraries are still intact; without it glibc aborts in libgfortran's exit handler ("free():
   corrupted unsorted chunks", every run of a C host). */
static void finalize_started(void)
{
    if (!started.FinalizeEx) return;
    finalized = 1;
    started.GILEnsure();
    started.FinalizeEx();
}


/* A saved state: the slave's state object, its serialised bytes once asked for, and the
   instance's FMI state and last successful time when it was saved. Every live one is in the
   list `saved_states`; a handle from the host is used only when found there. */
typedef struct Saved {
    struct Saved *next;
    Instance *owner;              /* made by this instance, freed with it */
    PyObject *data;
    PyObject *bytes;
    State state;
    double last_successful;
} Saved;

static int category_on(const Instance *in, const char *category)
{
    if (in->n_categories == 0) return 1;
    for (size_t i = 0; i < in->n_categories; i++)
        if (category && strcmp(category, in->categories[i]) == 0) return 1;
    return 0;
}

/* The host's logger, called with no lock of ours held. FMI 2.0's takes a printf format: a '%'
   of the text (a path, a URI) is doubled so that it cannot read arguments that were never passed. */
static void deliver(const Instance *in, Status status, const char *category, const char *message)
{
    if (in->logger3) {   /* FMI 3.0: the message is plain text */
        in->logger3(in->env, status, category, message);
        return;
    }
    if (!strchr(message, '%')) {
        in->logger2(in->env, in->name, status, category, message);
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
    in->logger2(in->env, in->name, status, category, safe);
    free(safe);
}

/* Warnings and worse always reach the host; information only with logging on. While the call
   holds Python's lock the message is queued (flush_log hands it over once it is released). */
static void emit(Instance *in, Status status, const char *category, const char *message)
{
    if ((in->logger2 == NULL && in->logger3 == NULL) || message == NULL) return;
    if (status < ST_WARNING && !(in->logging_on && category_on(in, category))) return;
    if (!in->in_python) {
        deliver(in, status, category, message);
        return;
    }
    Message *m = calloc(1, sizeof *m);
    if (!m) return;
    m->status = status;
    m->category = category ? strdup(category) : NULL;
    m->text = strdup(message);
    if (!m->text) {
        free(m->category);
        free(m);
        return;
    }
    *in->queue_end = m;
    in->queue_end = &m->next;
}

/* Hand the queued messages to the host's logger, in order (Python's lock released). */
static void flush_log(Instance *in)
{
    Message *m = in->queue;
    in->queue = NULL;
    in->queue_end = &in->queue;
    while (m) {
        Message *next = m->next;
        deliver(in, m->status, m->category, m->text);
        free(m->category);
        free(m->text);
        free(m);
        m = next;
    }
}

void logf_(Instance *in, Status status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *cat = status >= ST_FATAL ? "logStatusFatal" : status == ST_ERROR ? "logStatusError"
                      : status == ST_DISCARD ? "logStatusDiscard" : status == ST_WARNING ? "logStatusWarning"
                      : "logAll";
    emit(in, status, cat, msg);
}

/* A time [s] as Python's repr writes it (the shortest text that reads back to it, with ".0"
   when it would look like an integer), so that messages read alike from C and from Python. */
static const char *show_time(double t, char *out, size_t n)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(out, n, "%.*g", digits, t);
        if (strtod(out, NULL) == t) break;
    }
    if (isfinite(t) && !strpbrk(out, ".e")) strncat(out, ".0", n - strlen(out) - 1);
    return out;
}

/* The call is allowed in the instance's state; else log and refuse. */
int allowed(Instance *in, const char *call, int mask)
{
    if (in->state & mask) return 1;
    logf_(in, ST_ERROR, "%s is not allowed in state '%s'; the call was refused and the FMU is unchanged%s%s%s", call,
          shown(in, in->state), in->state == STEP_FAILED ? " (after a discarded step: " : "",
          in->state == STEP_FAILED ? in->flavour->leave_failed : "", in->state == STEP_FAILED ? ", to go on)" : "");
    return 0;
}

/* The slave refuses a call by logging an error and returning normally (a value refused, a state
   not applied): the call's status is then `to`. */
static Status escalate(const Instance *in, Status status, Status to)
{
    return (status < to && in->worst >= ST_ERROR) ? to : status;
}

/* resource location URI -> folder path (file:///p, file:/p, file://localhost/p; %XX decoded).
   Returns 0 with a reason in `why` when it is not a local folder URI. */
static int uri_path(const char *uri, char *out, size_t n, char *why, size_t nwhy)
{
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
    return 1;
}

/* The FMU's resource folder from the host's resource location: a file: URI (FMI 2.0, section
   2.1.5) or, with `uri` 0, a path (FMI 3.0, section 2.3.1: with a trailing separator). 0 with a
   reason in `why` when it is not an existing folder holding this FMU's slave. */
static int resource_folder(const char *given, int uri, char *out, size_t n, char *why, size_t nwhy)
{
    const char *what = uri ? "location" : "path";
    if (given == NULL || given[0] == '\0') {
        snprintf(why, nwhy, "no resource %s was given (NULL or empty)", what);
        return 0;
    }
    if (uri && !uri_path(given, out, n, why, nwhy)) return 0;
    if (!uri) snprintf(out, n, "%s", given);
    size_t k = strlen(out);
    while (k > 1 && out[k - 1] == '/') out[--k] = '\0';
    struct stat st;
    if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, nwhy, "the resource %s '%.300s' is not an existing folder", what, given);
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

/* ------------------------------------------------------------------ finding a Python runtime (C hosts)

   A C host has no Python in its process. The front end looks for one, in this order, and
   takes the first that fits:
     1. the runtime the FMU carries (resources/runtime, a --standalone build), started isolated
        from the host's environment;
     2. the interpreter of the build record (resources/flexmbs_python.txt);
     3. the interpreter named by the environment variable FLEXMBS_PYTHON;
     4. python3, then python, on PATH.
   Each interpreter (2-4) is asked by running the FMU's probe (resources/flexmbs_probe.py) what
   it lacks of the packages and versions the FMU needs, and where its shared libpython, home and
   module paths are. When none fits, the reason names each candidate and the one command that
   installs what is missing. */

typedef struct {
    char lib[4200], home[4200], exe[4200], version[32];
    char missing[700];        /* what the interpreter lacks, "" if nothing */
    char code[65536];         /* Python code adding the module paths (site.addsitedir) */
    size_t used;
} Runtime;

static void runtime_init(Runtime *r)
{
    memset(r, 0, offsetof(Runtime, code));
    r->used = (size_t)snprintf(r->code, sizeof r->code, "import site, sys\nfor p in [");
}

/* One "key=value" line of a record or of the probe's answer. */
static void runtime_line(Runtime *r, const char *line)
{
    if (strncmp(line, "libpython=", 10) == 0) snprintf(r->lib, sizeof r->lib, "%s", line + 10);
    else if (strncmp(line, "home=", 5) == 0) snprintf(r->home, sizeof r->home, "%s", line + 5);
    else if (strncmp(line, "executable=", 11) == 0) snprintf(r->exe, sizeof r->exe, "%s", line + 11);
    else if (strncmp(line, "version=", 8) == 0) snprintf(r->version, sizeof r->version, "%.20s", line + 8);
    else if (strncmp(line, "missing=", 8) == 0) {
        size_t k = strlen(r->missing);
        snprintf(r->missing + k, sizeof r->missing - k, "%s%s", k ? ", " : "", line + 8);
    } else if (strncmp(line, "path=", 5) == 0 && r->used + 2 * strlen(line) + 64 < sizeof r->code) {
        char lit[8400];
        py_literal(lit, sizeof lit, line + 5);
        r->used += (size_t)snprintf(r->code + r->used, sizeof r->code - r->used, "%s, ", lit);
    }
}

static void runtime_lines(Runtime *r, FILE *f)
{
    char line[4200];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        runtime_line(r, line);
    }
    snprintf(r->code + r->used, sizeof r->code - r->used, "]:\n    site.addsitedir(p)\n");
}

/* Run `python probe` and read its answer into r; 0 with the reason when it cannot run. */
static int probe(const char *python, const char *script, Runtime *r, char *why, size_t nwhy)
{
    runtime_init(r);
    int fd[2];
    if (access(python, X_OK) != 0) {
        snprintf(why, nwhy, "%.200s does not exist or cannot be run", python);
        return 0;
    }
    if (pipe2(fd, O_CLOEXEC) != 0) {   /* not inherited by what other threads of the host start */
        snprintf(why, nwhy, "no pipe for the probe");
        return 0;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fd[1], 1);
    posix_spawn_file_actions_addclose(&actions, fd[0]);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {(char *)python, (char *)script, NULL};
    extern char **environ;
    pid_t pid;
    int rc = posix_spawn(&pid, python, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fd[1]);
    if (rc != 0) {
        close(fd[0]);
        snprintf(why, nwhy, "%.200s could not be started: %s", python, strerror(rc));
        return 0;
    }
    FILE *f = fdopen(fd[0], "r");
    if (f) {
        runtime_lines(r, f);
        fclose(f);
    } else {
        close(fd[0]);
    }
    int status = 0;
    pid_t done;
    do done = waitpid(pid, &status, 0); while (done < 0 && errno == EINTR);
    if (!r->version[0]) {
        snprintf(why, nwhy, "%.200s did not answer the FMU's probe (not a Python >= 3.8?)", python);
        return 0;
    }
    return 1;
}

/* The build's headers define PyConfig for this minor version only: another version is
   started through the older API (which 3.8-3.13 still export). */
static int same_version(const Runtime *r)
{
    char mine[32];
    snprintf(mine, sizeof mine, "%d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION);
    return strcmp(r->version, mine) == 0;
}

static PyStatus init_config(PyApi *api, void *h, const Runtime *r, int isolated)
{
    PyConfig config;
    void (*init_isolated)(PyConfig *) = (void (*)(PyConfig *))dlsym(h, "PyConfig_InitIsolatedConfig");
    if (isolated && init_isolated) init_isolated(&config);
    else api->InitConfig(&config);
    config.install_signal_handlers = 0;   /* the host owns its signals */
    config.parse_argv = 0;
    /* a virtual environment: its executable, so that pyvenv.cfg gives the same sys.prefix and
       site-packages; else (the carried runtime) its home */
    PyStatus st = r->exe[0] ? api->SetBytesString(&config, &config.program_name, r->exe)
                            : api->SetBytesString(&config, &config.home, r->home);
    if (r->exe[0] && !api->StatusException(st)) st = api->SetBytesString(&config, &config.executable, r->exe);
    if (!api->StatusException(st)) st = api->InitializeFromConfig(&config);
    api->ConfigClear(&config);
    return st;
}

static int init_legacy(void *h, const Runtime *r, char *why, size_t nwhy)
{
    wchar_t *(*decode)(const char *, size_t *) = (wchar_t * (*)(const char *, size_t *))dlsym(h, "Py_DecodeLocale");
    void (*set_name)(const wchar_t *) = (void (*)(const wchar_t *))dlsym(h, "Py_SetProgramName");
    void (*init)(int) = (void (*)(int))dlsym(h, "Py_InitializeEx");
    if (!decode || !set_name || !init) {
        snprintf(why, nwhy, "Python %s lacks Py_SetProgramName (it can be started only by an FMU built with it)",
                 r->version);
        return 0;
    }
    wchar_t *name = decode(r->exe, NULL);   /* kept: Python keeps a pointer to it */
    if (!name) {
        snprintf(why, nwhy, "the path %.200s cannot be decoded", r->exe);
        return 0;
    }
    set_name(name);
    init(0);   /* 0: no signal handlers, the host owns its signals */
    return 1;
}

/* Load r's libpython and start it (isolated: ignore the host's PYTHON* variables). */
static int start_runtime(const Runtime *r, int isolated, char *why, size_t nwhy)
{
    if (!r->lib[0]) {
        snprintf(why, nwhy, "Python %s at %.200s has no shared libpython (built without --enable-shared)",
                 r->version, r->exe);
        return 0;
    }
    void *h = dlopen(r->lib, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    PyApi api;
    if (!h) {
        snprintf(why, nwhy, "its libpython cannot be loaded: %.400s", dlerror());
        return 0;
    }
    if (!lookup(h, &api)) {
        snprintf(why, nwhy, "%.300s lacks Python's initialisation API (Python >= 3.8 is needed)", r->lib);
        return 0;
    }
    if (!api.IsInitialized()) {
        if (same_version(r)) {
            PyStatus st = init_config(&api, h, r, isolated);
            if (api.StatusException(st)) {
                snprintf(why, nwhy, "the Python runtime %.300s (home %.300s) did not start: %.300s", r->lib, r->home,
                         st.err_msg ? st.err_msg : "no reason given");
                return 0;
            }
        } else if (!init_legacy(h, r, why, nwhy)) {
            return 0;
        }
    }
    int rc = api.RunSimpleString(r->code);
    api.SaveThread();   /* release the GIL: pythonfmu takes it per call, from any thread */
    /* this library must then stay loaded until exit, where it finalises the runtime */
    Dl_info self;
    if (dladdr((void *)&finalize_started, &self) && self.dli_fname &&
        dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) {
        started = api;
        atexit(finalize_started);
    }
    if (rc != 0) {
        snprintf(why, nwhy, "the module paths of %.300s could not be added", r->exe[0] ? r->exe : r->home);
        return 0;
    }
    return 1;
}

/* The runtime a --standalone FMU carries: resources/runtime/flexmbs_runtime.txt names its
   libpython and the libraries to load first (paths relative to that folder). 1 started,
   0 failed (reason in why), -1 the FMU carries none. */
static int carried_runtime(const char *resources, char *why, size_t nwhy)
{
    char dir[4200], file[4300], line[4200], path[8600];
    snprintf(dir, sizeof dir, "%s/runtime", resources);
    snprintf(file, sizeof file, "%s/flexmbs_runtime.txt", dir);
    FILE *f = fopen(file, "r");
    if (!f) return -1;
    static Runtime r;
    runtime_init(&r);
    snprintf(r.home, sizeof r.home, "%s", dir);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strncmp(line, "preload=", 8) == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, line + 8);
            if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE)) {
                snprintf(why, nwhy, "the FMU's runtime library %.300s cannot be loaded: %.400s", path, dlerror());
                fclose(f);
                return 0;
            }
        } else if (strncmp(line, "libpython=", 10) == 0) {
            snprintf(r.lib, sizeof r.lib, "%.3900s/%.250s", dir, line + 10);
        } else if (strncmp(line, "version=", 8) == 0) {
            snprintf(r.version, sizeof r.version, "%.20s", line + 8);
        }
    }
    fclose(f);
    snprintf(r.code + r.used, sizeof r.code - r.used, "]:\n    site.addsitedir(p)\n");
    if (!same_version(&r)) {
        snprintf(why, nwhy, "the FMU's runtime is Python %s, its front end was built for another version: rebuild it",
                 r.version);
        return 0;
    }
    return start_runtime(&r, 1, why, nwhy);
}

/* Try one interpreter: 1 started; 0 not usable, with its reason appended to `reasons` and,
   for the first one that only lacks packages, the command that installs them in `fix`. */
static int try_python(const char *what, const char *python, const char *probe_script, char *reasons, size_t nreasons,
                      char *fix, size_t nfix)
{
    static Runtime r;
    char why[900] = "";
    if (probe(python, probe_script, &r, why, sizeof why)) {
        if (r.missing[0]) {
            snprintf(why, sizeof why, "%.150s (Python %s) lacks %.650s", python, r.version, r.missing);
            if (!fix[0]) {
                const char *q = strchr(python, ' ') ? "\"" : "";   /* quoted for a shell if it holds a space */
                size_t k = (size_t)snprintf(fix, nfix, "%s%s%s -m pip install", q, python, q);
                for (char *m = r.missing; *m && k + 4 < nfix;) {   /* each "spec (why)" -> "spec" */
                    size_t n = strcspn(m, " ");
                    k += (size_t)snprintf(fix + k, nfix - k, " \"%.*s\"", (int)n, m);
                    m = strstr(m, ", ");
                    if (!m) break;
                    m += 2;
                }
            }
        } else if (start_runtime(&r, 0, why, sizeof why)) {
            return 1;
        }
    }
    size_t k = strlen(reasons);
    snprintf(reasons + k, nreasons - k, "%s%s: %s", k ? "; " : "", what, why);
    return 0;
}

/* The interpreter named `name` on PATH, or "" */
static void on_path(const char *name, char *out, size_t n)
{
    const char *path = getenv("PATH");
    out[0] = '\0';
    while (path && *path) {
        size_t len = strcspn(path, ":");
        snprintf(out, n, "%.*s/%s", (int)len, path, name);
        if (len && access(out, X_OK) == 0) return;
        path += len + (path[len] == ':');
    }
    out[0] = '\0';
}

/* Make sure a Python runtime runs in this process: the host's own (a Python host), else the
   first that fits of those listed above. Returns 0 with the reason in `why`. */
static int ensure_python(const char *resources, char *why, size_t nwhy)
{
    PyApi api;
    if (lookup(NULL, &api) && api.IsInitialized()) return 1;   /* a Python host */
    int carried = carried_runtime(resources, why, nwhy);
    if (carried >= 0) return carried;

    char record[4200], script[4200], reasons[1600] = "", fix[700] = "", python[4200] = "";
    snprintf(record, sizeof record, "%s/%s", resources, SHIM_RECORD);
    snprintf(script, sizeof script, "%s/flexmbs_probe.py", resources);
    static Runtime built;
    runtime_init(&built);
    FILE *f = fopen(record, "r");
    if (f) {
        runtime_lines(&built, f);
        fclose(f);
    }
    if (built.exe[0] && try_python("the Python the FMU was built with", built.exe, script, reasons, sizeof reasons,
                                   fix, sizeof fix)) return 1;
    if (!built.exe[0]) snprintf(reasons, sizeof reasons, "the build record %.200s names no interpreter", record);
    const char *env = getenv("FLEXMBS_PYTHON");
    if (env && env[0] && try_python("FLEXMBS_PYTHON", env, script, reasons, sizeof reasons, fix, sizeof fix)) return 1;
    const char *names[] = {"python3", "python"};
    for (int i = 0; i < 2; i++) {
        on_path(names[i], python, sizeof python);
        if (python[0] && try_python(names[i] == names[0] ? "python3 on PATH" : "python on PATH", python, script,
                                    reasons, sizeof reasons, fix, sizeof fix)) return 1;
    }
    snprintf(why, nwhy, "no Python that can run this FMU was found (this process runs none). %s%.300s. Tried: "
             "%.600s%s", fix[0] ? "Install what is missing with: " : "Set FLEXMBS_PYTHON to a Python with a shared "
             "libpython and the packages the FMU needs (numpy, scipy, numba, ...), or rebuild it with --standalone", fix,
             reasons, env && env[0] ? "" : "; FLEXMBS_PYTHON is not set");
    return 0;
}


/* ------------------------------------------------------------------ calling the slave (GIL held) */

/* The pending Python exception as one logged error naming the call; cleared. */
static void log_exception(Instance *in, const char *call)
{
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    py.ErrFetch(&type, &value, &tb);
    PyObject *tname = type ? py.GetAttrString(type, "__name__") : NULL;
    PyObject *text = value ? py.Str(value) : NULL;
    const char *t = tname ? py.AsUTF8(tname) : NULL;
    const char *v = text ? py.AsUTF8(text) : NULL;
    if (py.ErrOccurred()) py.ErrClear();
    logf_(in, ST_ERROR, "%s failed in Python: %s: %s", call, t ? t : "exception", v ? v : "(no message)");
    if (tname) py.DecRef(tname);
    if (text) py.DecRef(text);
    if (type) py.DecRef(type);
    if (value) py.DecRef(value);
    if (tb) py.DecRef(tb);
}

/* Pass the slave's queued messages to the host (GuardedSlave.fmi_take_log: (status, category,
   message) tuples), noting the worst status. */
static void drain_log(Instance *in)
{
    if (!in->log_queue || py.ListSize(in->log_queue) <= 0) return;
    PyObject *msgs = py.GetAttrString(in->slave, "fmi_take_log");
    PyObject *list = msgs ? py.CallObject(msgs, NULL) : NULL;
    if (msgs) py.DecRef(msgs);
    if (!list) {
        log_exception(in, "reading the FMU's messages");
        return;
    }
    for (Py_ssize_t i = 0, n = py.ListSize(list); i < n; i++) {
        PyObject *m = py.ListGetItem(list, i);
        Status status = (Status)py.LongAsLong(py.TupleGetItem(m, 0));
        const char *category = py.AsUTF8(py.TupleGetItem(m, 1));
        const char *text = py.AsUTF8(py.TupleGetItem(m, 2));
        if (status > in->worst) in->worst = status;
        emit(in, status, category, text);
    }
    if (py.ErrOccurred()) log_exception(in, "reading the FMU's messages");
    py.DecRef(list);
}

/* slave.<method>(*args), the arguments built from `fmt` (Py_BuildValue's format: "(dd)", "(O)",
   NULL for none). Returns a new reference, or NULL with the exception logged; the slave's
   messages are passed on either way. */
static PyObject *invoke(PyObject *obj, const char *method, const char *fmt, va_list ap)
{
    PyObject *args = fmt ? py.VaBuildValue(fmt, ap) : NULL;
    PyObject *fn = (args || !fmt) ? py.GetAttrString(obj, method) : NULL;
    PyObject *result = fn ? py.CallObject(fn, args) : NULL;
    if (fn) py.DecRef(fn);
    if (args) py.DecRef(args);
    return result;
}

/* obj.<method>(*args) without logging: a new reference, or NULL with the exception pending. */
static PyObject *invoke_on(PyObject *obj, const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *result = invoke(obj, method, fmt, ap);
    va_end(ap);
    return result;
}

static PyObject *vcall(Instance *in, const char *method, const char *fmt, va_list ap)
{
    PyObject *result = invoke(in->slave, method, fmt, ap);
    if (!result) log_exception(in, method);
    drain_log(in);
    return result;
}

static PyObject *call(Instance *in, const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *result = vcall(in, method, fmt, ap);
    va_end(ap);
    return result;
}

/* A call whose result is not needed: ST_OK, or ST_ERROR when Python raised (the slave's own
   refusals are logged errors, see escalate). */
static Status call_status(Instance *in, const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *result = vcall(in, method, fmt, ap);
    va_end(ap);
    if (!result) return ST_ERROR;
    py.DecRef(result);
    return ST_OK;
}

/* ------------------------------------------------------------------ Python's lock */

/* A runtime runs that may be called: not finalised by finalize_started, nor by a Python host
   (its exit, after which C exit handlers may still call the FMU). */
static int python_alive(void)
{
    return !finalized && py.IsInitialized && py.IsInitialized();
}

/* Take Python's lock for a call of in->call; 0 (logged) when the runtime is gone. */
static int enter_python(Instance *in, PyGILState_STATE *gil)
{
    if (!python_alive()) {
        logf_(in, ST_ERROR, "%s: the Python runtime of this process has been finalised (the process is exiting); "
              "nothing can run in it, the call was refused", in->call);
        return 0;
    }
    *gil = py.GILEnsure();
    in->worst = ST_OK;
    in->in_python = 1;
    return 1;
}

/* Release Python's lock: an exception still pending is logged and cleared first (none outlives
   a call to poison the next), then the queued messages go to the host. */
static void leave_python(Instance *in, PyGILState_STATE gil)
{
    if (py.ErrOccurred()) log_exception(in, in->call);
    in->in_python = 0;
    py.GILRelease(gil);
    flush_log(in);
}

#define GIL_ENTER                         \
    PyGILState_STATE gil_;                \
    if (!enter_python(in, &gil_)) return ST_ERROR;
#define GIL_LEAVE leave_python(in, gil_);

/* ------------------------------------------------------------------ the fast path */

/* A held view of `obj` as a 1-D C-contiguous array of `itemsize`-byte items whose struct format
   is one letter of `formats` (numpy: "d" float64, "i" int32, "l" or "q" int64); 0 (no view
   held, no exception left) when it is not one. */
static int view_of(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t itemsize, const char *formats)
{
    memset(view, 0, sizeof *view);
    if (!obj || py.GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) != 0) {
        if (py.ErrOccurred()) py.ErrClear();
        memset(view, 0, sizeof *view);
        return 0;
    }
    if (view->ndim == 1 && view->itemsize == itemsize && view->format && view->format[0] && !view->format[1] &&
        strchr(formats, view->format[0]))
        return 1;
    py.BufferRelease(view);
    memset(view, 0, sizeof *view);
    return 0;
}

/* The map is one this FMU can use: a kind 0..3 per value reference, a fast kind only for a Real
   variable, and its slot within the input or output array. */
static int map_ok(const Fast *f, char *why, size_t nwhy)
{
    static const char types[] = SHIM_VAR_TYPES;
    for (size_t vr = 0; vr < sizeof types - 1; vr++) {
        int32_t k = f->kind[vr], s = f->slot[vr];
        size_t limit = k == VR_INPUT ? f->n_inputs : f->n_outputs;
        if (k < VR_SLOW || k > VR_OUTPUT || (k != VR_SLOW && (types[vr] != 'R' || s < 0 || (size_t)s >= limit))) {
            snprintf(why, nwhy, "value reference %zu has kind %d and slot %d, with %zu inputs and %zu outputs", vr,
                     (int)k, (int)s, f->n_inputs, f->n_outputs);
            return 0;
        }
    }
    return 1;
}

static void drop_fast(Fast *f)
{
    for (int i = 0; i < 3; i++) py.BufferRelease(&f->views[i]);   /* a zeroed view is a no-op */
    free(f->kind);
    free(f->slot);
    memset(f, 0, sizeof *f);
}

/* Take the slave's arrays (inputs, outputs, kind, slot, flags): views of the three it shares,
   checked copies of the map. 0 with the reason in `why` when they do not fit this FMU. */
static int fast_from(Fast *f, PyObject *arrays, char *why, size_t nwhy)
{
    static const char *names[5] = {"inputs", "outputs", "kind", "slot", "flags"};
    static const char *kinds[5] = {"float64", "float64", "int32", "int32", "int64"};
    const size_t n = sizeof(SHIM_VAR_TYPES) - 1;
    Py_buffer map[2];
    Py_buffer *views[5] = {&f->views[0], &f->views[1], &map[0], &map[1], &f->views[2]};
    const char *formats[5] = {"d", "d", "i", "i", "lq"};
    const Py_ssize_t sizes[5] = {8, 8, 4, 4, 8};
    memset(f, 0, sizeof *f);
    memset(map, 0, sizeof map);
    int ok = py.TupleSize(arrays) == 5;
    if (!ok) snprintf(why, nwhy, "not a tuple of 5 arrays");
    for (int i = 0; ok && i < 5; i++)
        if (!(ok = view_of(py.TupleGetItem(arrays, i), views[i], i != 2 && i != 3, sizes[i], formats[i])))
            snprintf(why, nwhy, "%s is not a one-dimensional contiguous%s %s array", names[i],
                     i == 2 || i == 3 ? "" : " writable", kinds[i]);
    if (ok && ((size_t)map[0].shape[0] != n || (size_t)map[1].shape[0] != n || f->views[2].shape[0] < 2)) {
        snprintf(why, nwhy, "the map covers %zd and %zd value references (this FMU has %zu), flags has %zd entries",
                 map[0].shape[0], map[1].shape[0], n, f->views[2].shape[0]);
        ok = 0;
    }
    if (ok) {
        f->inputs = f->views[0].buf, f->n_inputs = (size_t)f->views[0].shape[0];
        f->outputs = f->views[1].buf, f->n_outputs = (size_t)f->views[1].shape[0];
        f->flags = f->views[2].buf;
        f->kind = malloc(n * sizeof *f->kind + 1);
        f->slot = malloc(n * sizeof *f->slot + 1);
        ok = f->kind && f->slot;
        if (ok) {
            memcpy(f->kind, map[0].buf, n * sizeof *f->kind);
            memcpy(f->slot, map[1].buf, n * sizeof *f->slot);
            ok = map_ok(f, why, nwhy);
        }
    }
    py.BufferRelease(&map[0]);
    py.BufferRelease(&map[1]);
    if (py.ErrOccurred()) py.ErrClear();
    if (!ok) drop_fast(f);
    f->on = ok;
    return ok;
}

/* The slave's fast path (GuardedSlave.fmi_fast_path: None, or its five arrays). */
static void take_fast_path(Instance *in)
{
    memset(&in->fast, 0, sizeof in->fast);
    PyObject *arrays = call(in, "fmi_fast_path", NULL);
    if (!arrays) return;
    char why[300];
    if (py.IsTrue(arrays) == 1 && !fast_from(&in->fast, arrays, why, sizeof why))   /* None: no fast path */
        logf_(in, ST_WARNING, "the slave's fast path does not fit this FMU (%s); every call goes through Python",
              why);
    if (py.ErrOccurred()) py.ErrClear();
    py.DecRef(arrays);
}

/* Drop the slave (Python's lock held): it breaks its own reference cycles first
   (GuardedSlave.fmi_release), so that it is freed now, not by a later cyclic collection. */
static void release_slave(Instance *in)
{
    drop_fast(&in->fast);
    if (in->slave) {
        PyObject *r = invoke_on(in->slave, "fmi_release", NULL);
        if (r) py.DecRef(r);
        else log_exception(in, "fmi_release");
    }
    if (in->strings) py.DecRef(in->strings);
    if (in->log_queue) py.DecRef(in->log_queue);
    if (in->slave) py.DecRef(in->slave);
    in->strings = in->log_queue = in->slave = NULL;
}

/* Py_BuildValue through the looked-up Py_VaBuildValue. */
static PyObject *build(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *o = py.VaBuildValue(fmt, ap);
    va_end(ap);
    return o;
}

/* The slave module of a resource folder: <resources>/SHIM_MODULE.py run as a module named
   SHIM_MODULE_<hash of the folder>, kept in sys.modules, so that two FMUs with one model
   identifier (two builds of a model) in one process each run their own module; a new
   reference, or NULL with the exception pending. */
static PyObject *slave_module(const char *resources)
{
    unsigned long long h = 1469598103934665603ULL;   /* FNV-1a, 64 bit */
    for (const char *p = resources; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    char name[256], file[4400];
    snprintf(name, sizeof name, "%s_%016llx", SHIM_MODULE, h);
    snprintf(file, sizeof file, "%s/%s.py", resources, SHIM_MODULE);
    PyObject *key = py.UnicodeFromString(name);
    PyObject *module = key ? py.GetModule(key) : NULL;
    if (key) py.DecRef(key);
    if (module || py.ErrOccurred()) return module;
    PyObject *util = py.ImportModule("importlib.util");
    PyObject *spec = util ? invoke_on(util, "spec_from_file_location", "(ss)", name, file) : NULL;
    module = spec ? invoke_on(util, "module_from_spec", "(O)", spec) : NULL;
    int listed = module && py.DictSetItemString(py.GetModuleDict(), name, module) == 0;
    PyObject *loader = listed ? py.GetAttrString(spec, "loader") : NULL;
    PyObject *done = loader ? invoke_on(loader, "exec_module", "(O)", module) : NULL;
    if (!done && module) {
        PyObject *type = NULL, *value = NULL, *tb = NULL;   /* keep the reason across the clean-up */
        py.ErrFetch(&type, &value, &tb);
        if (listed) py.DictDelItemString(py.GetModuleDict(), name);
        py.DecRef(module);
        module = NULL;
        py.ErrRestore(type, value, tb);
    }
    if (done) py.DecRef(done);
    if (loader) py.DecRef(loader);
    if (spec) py.DecRef(spec);
    if (util) py.DecRef(util);
    return module;
}

/* Create the slave SHIM_CLASS(instance_name=..., resources=..., visible=...) from the slave
   module of the resources; 0 with the reason logged. */
static int create_slave(Instance *in)
{
    PyObject *sys = py.ImportModule("sys");
    PyObject *path = sys ? py.GetAttrString(sys, "path") : NULL;
    PyObject *folder = py.UnicodeFromString(in->resources);
    int ok = path && folder && (py.SequenceContains(path, folder) == 1 || py.ListInsert(path, 0, folder) == 0);
    if (folder) py.DecRef(folder);
    if (path) py.DecRef(path);
    if (sys) py.DecRef(sys);
    PyObject *module = ok ? slave_module(in->resources) : NULL;
    PyObject *cls = module ? py.GetAttrString(module, SHIM_CLASS) : NULL;
    if (module) py.DecRef(module);
    PyObject *args = cls ? build("()") : NULL;
    PyObject *kwargs = args ? build("{s:s,s:s,s:i}", "instance_name", in->name, "resources", in->resources, "visible",
                                    in->visible) : NULL;
    in->slave = kwargs ? py.Call(cls, args, kwargs) : NULL;
    if (kwargs) py.DecRef(kwargs);
    if (args) py.DecRef(args);
    if (cls) py.DecRef(cls);
    in->log_queue = in->slave ? py.GetAttrString(in->slave, "log_queue") : NULL;
    if (!in->slave || !in->log_queue) {
        char what[300];
        snprintf(what, sizeof what, "%s: creating the Python slave " SHIM_MODULE "." SHIM_CLASS,
                 in->flavour->instantiate);
        log_exception(in, what);
        release_slave(in);
        return 0;
    }
    drain_log(in);
    take_fast_path(in);
    return 1;
}
/* What the slave module says before the slave is made (NOTICE: the kernels it must compile,
   and about how long that takes), logged as a warning so that a host shows it before a long
   first instantiation instead of seeming hung. GIL held. */
static void announce(Instance *in)
{
    PyObject *module = slave_module(in->resources);
    PyObject *notice = module ? py.GetAttrString(module, "NOTICE") : NULL;
    const char *text = notice ? py.AsUTF8(notice) : NULL;
    if (text && text[0]) logf_(in, ST_WARNING, "%s: %s", in->flavour->instantiate, text);
    if (py.ErrOccurred()) py.ErrClear();   /* a failing module is reported when the slave is made */
    if (notice) py.DecRef(notice);
    if (module) py.DecRef(module);
}

/* ------------------------------------------------------------------ saved states */

static pthread_mutex_t saved_lock = PTHREAD_MUTEX_INITIALIZER;
static Saved *saved_states;   /* every live state this library made */

/* The saved state behind a handle, or NULL: the handle is compared with the live states, never
   read, so a forged, freed or uninitialised one cannot make the FMU read freed memory. */
static Saved *find_saved(void *handle)
{
    pthread_mutex_lock(&saved_lock);
    Saved *s = saved_states;
    while (s && (void *)s != handle) s = s->next;
    pthread_mutex_unlock(&saved_lock);
    return s;
}

/* A new live state of `in` holding `data` (the reference is taken over; NULL when out of memory). */
static Saved *new_saved(Instance *in, PyObject *data)
{
    Saved *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->owner = in;
    s->data = data;
    pthread_mutex_lock(&saved_lock);
    s->next = saved_states;
    saved_states = s;
    pthread_mutex_unlock(&saved_lock);
    return s;
}

/* Put `data` (a reference taken over), the FMI state and the time into the state behind *handle
   when `in` made it (FMI: a given state is overwritten), else into a new one. 0 when out of memory
   (data released). Python's lock held. */
static int store_saved(Instance *in, void **handle, PyObject *data, State state, double last)
{
    Saved *s = find_saved(*handle);
    if (s && s->owner == in) {
        py.DecRef(s->data);
        if (s->bytes) py.DecRef(s->bytes);
        s->data = data;
        s->bytes = NULL;
    } else if ((s = new_saved(in, data)) == NULL) {
        py.DecRef(data);
        return 0;
    }
    s->state = state;
    s->last_successful = last;
    *handle = s;
    return 1;
}

/* Take a state out of the list (or, with s == NULL, every state `owner` made) and free it; its
   Python objects are released when the runtime still runs (Python's lock held then). */
static void free_saved(Saved *s, const Instance *owner, int with_python)
{
    pthread_mutex_lock(&saved_lock);
    Saved **link = &saved_states, *gone = NULL;
    while (*link) {
        Saved *x = *link;
        if (x == s || (!s && x->owner == owner)) {
            *link = x->next;
            x->next = gone;
            gone = x;
        } else {
            link = &x->next;
        }
    }
    pthread_mutex_unlock(&saved_lock);
    while (gone) {
        Saved *next = gone->next;
        if (with_python) {
            py.DecRef(gone->data);
            if (gone->bytes) py.DecRef(gone->bytes);
        }
        free(gone);
        gone = next;
    }
}


/* ------------------------------------------------------------------ the instance's life */

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

static void free_instance(Instance *in)
{
    if (!in) return;
    flush_log(in);
    for (size_t i = 0; i < in->n_categories; i++) free(in->categories[i]);
    free(in->categories);
    free(in->name);
    free(in);
}

/* A new instance in state "instantiated", with no slave yet; NULL when out of memory or when
   the host gave no logger (the FMI standards require one: without it nothing could say why). */
Instance *instance_new(const Flavour *flavour, const char *name, void *env, Logger2 logger2, Logger3 logger3,
                       int visible, int logging_on)
{
    Instance *in = calloc(1, sizeof *in);
    if (!in) return NULL;
    in->flavour = flavour;
    in->name = strdup(name ? name : "");
    in->env = env;
    in->logger2 = logger2;
    in->logger3 = logger3;
    in->logging_on = logging_on;
    in->visible = visible;
    in->state = INSTANTIATED;
    in->call = flavour->instantiate;
    in->queue_end = &in->queue;
    if (!in->name || (!logger2 && !logger3)) {
        free_instance(in);
        return NULL;
    }
    if (!name || !name[0]) {
        logf_(in, ST_ERROR, "%s: the instance name is missing", in->call);
        free_instance(in);
        return NULL;
    }
    return in;
}

/* Check the instantiation token and the resource location (a file: URI when `uri`, else a
   path), find or start a Python runtime and create the slave: `in`, or NULL with the instance
   freed and the reason logged. */
Instance *instance_start(Instance *in, const char *token, const char *resources, int uri)
{
    char why[1200];
    if (!token || strcmp(token, SHIM_GUID) != 0) {
        logf_(in, ST_ERROR, "%s: %s '%.200s' does not match this FMU's '%s' (the modelDescription.xml belongs to "
              "another build)", in->call, in->flavour->token, token ? token : "(NULL)", SHIM_GUID);
        goto fail;
    }
    if (!resource_folder(resources, uri, in->resources, sizeof in->resources, why, sizeof why)) {
        logf_(in, ST_ERROR, "%s: %s", in->call, why);
        goto fail;
    }
    if (finalized || (py.IsInitialized && !py.IsInitialized())) {   /* never start a runtime again at exit */
        logf_(in, ST_ERROR, "%s: the Python runtime of this process has been finalised (the process is exiting); "
              "no instance can be made", in->call);
        goto fail;
    }
    pthread_mutex_lock(&start_lock);
    int ready = ensure_python(in->resources, why, sizeof why);
    if (ready && !py.GILEnsure && !lookup(NULL, &py)) {
        snprintf(why, sizeof why, "the Python runtime of this process lacks part of Python's C API (3.8 or newer "
                 "is needed)");
        ready = 0;
    }
    pthread_mutex_unlock(&start_lock);
    if (!ready) {
        logf_(in, ST_ERROR, "%s: %s", in->call, why);
        goto fail;
    }
    PyGILState_STATE gil;
    int created = 0;
    if (enter_python(in, &gil)) {
        announce(in);
        created = create_slave(in);
    }
    if (in->in_python) leave_python(in, gil);
    if (created) return in;
fail:
    free_instance(in);
    return NULL;
}

/* Free the instance and every state it made. With the runtime gone (the process is exiting)
   only the C side is freed: the Python objects went with the runtime. */
void instance_free(Instance *in)
{
    if (python_alive()) {
        PyGILState_STATE gil;
        enter_python(in, &gil);
        free_saved(NULL, in, 1);
        release_slave(in);
        leave_python(in, gil);
    } else {
        free_saved(NULL, in, 0);
        free(in->fast.kind);
        free(in->fast.slot);
    }
    free_instance(in);
}

Status set_debug_logging(Instance *in, int on, size_t n, const char *const categories[])
{
    if (n > 0 && !categories) {
        logf_(in, ST_ERROR, "%s: %zu categories but no array", in->call, n);
        return ST_ERROR;
    }
    for (size_t i = 0; i < in->n_categories; i++) free(in->categories[i]);
    free(in->categories);
    in->categories = n ? calloc(n, sizeof(char *)) : NULL;
    in->n_categories = in->categories ? n : 0;
    for (size_t i = 0; i < in->n_categories; i++) in->categories[i] = strdup(categories[i] ? categories[i] : "");
    in->logging_on = on;
    return ST_OK;
}

/* The experiment's start and stop times [s] and tolerance, checked, handed to the slave. */
Status setup_experiment(Instance *in, int tolerance_defined, double tolerance, double start, int stop_defined,
                        double stop)
{
    if (!isfinite(start) || fabs(start) > SHIM_TIME_LIMIT) {
        logf_(in, ST_ERROR, "%s: the start time %g s is not a finite time within +-%g s; refused", in->call, start,
              SHIM_TIME_LIMIT);
        return ST_ERROR;
    }
    if (stop_defined && !(isfinite(stop) && stop >= start)) {
        logf_(in, ST_ERROR, "%s: the stop time %g s is not a finite time at or after the start time %g s; refused",
              in->call, stop, start);
        return ST_ERROR;
    }
    if (tolerance_defined && !(isfinite(tolerance) && tolerance > 0)) {
        logf_(in, ST_ERROR, "%s: the tolerance %g is not a finite positive number; refused", in->call, tolerance);
        return ST_ERROR;
    }
    GIL_ENTER
    PyObject *stop_ = stop_defined ? py.FloatFromDouble(stop) : build("");
    PyObject *tol = tolerance_defined ? py.FloatFromDouble(tolerance) : build("");
    Status s = call_status(in, "setup_experiment", "(dOO)", start, stop_, tol);
    py.DecRef(stop_);
    py.DecRef(tol);
    GIL_LEAVE
    if (s <= ST_WARNING) in->last_successful = start;
    return s;
}

/* A transition through one slave method: on success the instance moves to `next`. */
Status transition(Instance *in, const char *method, State next)
{
    GIL_ENTER
    Status s = call_status(in, method, NULL);
    GIL_LEAVE
    if (s <= ST_WARNING) in->state = next;
    return s;
}

/* A new slave in place of the old one: the instance as freshly instantiated; without a slave
   (it could not be made) only freeing the instance remains. */
Status reset_instance(Instance *in)
{
    GIL_ENTER
    release_slave(in);
    int created = create_slave(in);
    GIL_LEAVE
    if (!created) {
        in->state = FATAL_STATE;
        return ST_FATAL;
    }
    in->state = INSTANTIATED;
    in->last_successful = 0.0;
    return ST_OK;
}

/* ------------------------------------------------------------------ values */

/* The call reads values (fmi2Get..., fmi3Get...). */
static int reading(const char *call)
{
    return strlen(call) > 7 && strncmp(call + 4, "Get", 3) == 0;
}

/* Every value reference exists and is of type `type` (a letter of SHIM_VAR_TYPES). */
int refs_ok(Instance *in, const char *call, const uint32_t vr[], size_t nvr, const void *values,
                   char type)
{
    static const char types[] = SHIM_VAR_TYPES;
    const size_t n = sizeof types - 1;
    if (nvr == 0) return 1;
    if (!vr || !values) {
        logf_(in, ST_ERROR, "%s: %zu value references but a NULL array; refused", call, nvr);
        return 0;
    }
    for (size_t i = 0; i < nvr; i++) {
        if (SHIM_HAS_TIME && vr[i] == SHIM_TIME_VR) {
            logf_(in, ST_ERROR, "%s: value reference %u is the independent variable time, which only the Float64 "
                  "getter reads; nothing was %s", call, vr[i], reading(call) ? "read" : "set");
            return 0;
        }
        if (vr[i] >= n) {
            logf_(in, ST_ERROR, "%s: value reference %u does not exist (this FMU has 0 ... %zu); nothing was %s",
                  call, vr[i], n - 1, reading(call) ? "read" : "set");
            return 0;
        }
        if (types[vr[i]] != type) {
            logf_(in, ST_ERROR, "%s: value reference %u is not of this type (it is a%s variable); nothing was %s",
                  call, vr[i], types[vr[i]] == 'S' ? " String" : types[vr[i]] == 'R' ? " Real" : "n Integer/Boolean",
                  reading(call) ? "read" : "set");
            return 0;
        }
    }
    return 1;
}

/* A Python list of the value references. */
static PyObject *vr_list(const uint32_t vr[], size_t nvr)
{
    PyObject *list = py.ListNew((Py_ssize_t)nvr);
    for (size_t i = 0; list && i < nvr; i++) {
        PyObject *o = py.LongFromLong((long)vr[i]);
        if (!o) {   /* the exception stays set for the caller to log */
            py.DecRef(list);
            return NULL;
        }
        py.ListSetItem(list, (Py_ssize_t)i, o);
    }
    return list;
}

/* slave.set_<kind>(vrs, values), the values converted by `box`. */
static Status set_values(Instance *in, const char *method, const uint32_t vr[], size_t nvr,
                             PyObject *(*box)(const void *, size_t), const void *values)
{
    GIL_ENTER
    PyObject *refs = vr_list(vr, nvr), *vals = refs ? py.ListNew((Py_ssize_t)nvr) : NULL;
    for (size_t i = 0; vals && i < nvr; i++) {
        /* a value Python cannot take (a string that is not UTF-8) is refused with its reason:
           a NULL item in the list would crash the slave */
        PyObject *o = box(values, i);
        if (!o) {
            py.DecRef(vals);
            vals = NULL;
            break;
        }
        py.ListSetItem(vals, (Py_ssize_t)i, o);
    }
    Status s = ST_ERROR;
    if (refs && vals)
        s = call_status(in, method, "(OO)", refs, vals);
    else
        log_exception(in, method);
    if (refs) py.DecRef(refs);
    if (vals) py.DecRef(vals);
    GIL_LEAVE
    return escalate(in, s, ST_WARNING);
}

/* slave.get_<kind>(vrs) -> list, each item stored by `unbox`. Python holds the GIL on return
   (the caller releases it): a string getter keeps the list while the host reads the strings. */
static Status get_values(Instance *in, const char *method, const uint32_t vr[], size_t nvr,
                             int (*unbox)(PyObject *, void *, size_t), void *values, PyObject **keep)
{
    PyObject *refs = vr_list(vr, nvr);
    if (!refs) {
        log_exception(in, method);
        return ST_ERROR;
    }
    PyObject *list = call(in, method, "(O)", refs);
    py.DecRef(refs);
    if (!list) return ST_ERROR;
    Status s = ST_OK;
    Py_ssize_t got = py.ListSize(list);
    if (got != (Py_ssize_t)nvr) {
        if (py.ErrOccurred()) py.ErrClear();
        logf_(in, ST_ERROR, "%s returned %zd values for %zu value references", method, got, nvr);
        s = ST_ERROR;
    }
    for (size_t i = 0; s == ST_OK && i < nvr; i++)
        if (!unbox(py.ListGetItem(list, (Py_ssize_t)i), values, i)) {
            log_exception(in, method);
            s = ST_ERROR;
        }
    if (keep && s == ST_OK) {
        if (*keep) py.DecRef(*keep);
        *keep = list;
    } else {
        py.DecRef(list);
    }
    return escalate(in, s, ST_ERROR);
}

static PyObject *box_real(const void *v, size_t i) { return py.FloatFromDouble(((const double *)v)[i]); }
static PyObject *box_integer(const void *v, size_t i) { return py.LongFromLong(((const int *)v)[i]); }
static PyObject *box_boolean(const void *v, size_t i) { return py.BoolFromLong(((const int *)v)[i]); }
static PyObject *box_string(const void *v, size_t i)
{
    const char *s = ((const char *const *)v)[i];
    return py.UnicodeFromString(s ? s : "");
}
static int unbox_real(PyObject *o, void *v, size_t i)
{
    ((double *)v)[i] = py.FloatAsDouble(o);
    return !py.ErrOccurred();
}
static int unbox_integer(PyObject *o, void *v, size_t i)
{
    ((int *)v)[i] = (int)py.LongAsLong(o);
    return !py.ErrOccurred();
}
static int unbox_boolean(PyObject *o, void *v, size_t i)
{
    int t = py.IsTrue(o);
    ((int *)v)[i] = t > 0;
    return t >= 0;
}
static int unbox_string(PyObject *o, void *v, size_t i)
{
    ((const char **)v)[i] = py.AsUTF8(o);
    return ((const char **)v)[i] != NULL;
}

/* Fast path of setting Reals: every reference an input, every value finite, no refused input
   pending (the slave clears that). Returns 0 when the call must go through Python. */
static int fast_set(Instance *in, const uint32_t vr[], size_t nvr, const double value[])
{
    const Fast *f = &in->fast;
    if (!f->on || f->flags[1] != 0) return 0;
    for (size_t i = 0; i < nvr; i++)
        if (f->kind[vr[i]] != VR_INPUT || !isfinite(value[i])) return 0;
    for (size_t i = 0; i < nvr; i++) f->inputs[f->slot[vr[i]]] = value[i];
    f->flags[0] = 0;   /* the outputs no longer belong to these inputs */
    return 1;
}

/* Fast path of getting Reals: inputs and outputs only; stale outputs are computed by one call
   of slave.fmi_refresh(level). Returns 0 when the call must go through Python, else 1 with
   *status set. */
static int fast_get(Instance *in, const uint32_t vr[], size_t nvr, double value[], Status *status)
{
    const Fast *f = &in->fast;
    if (!f->on) return 0;
    int64_t level = 0;
    for (size_t i = 0; i < nvr; i++) {
        int32_t k = f->kind[vr[i]];
        if (k == VR_SLOW) return 0;
        if (k == VR_STATE_OUTPUT && level < 1) level = 1;
        if (k == VR_OUTPUT) level = 2;
    }
    *status = ST_OK;
    PyGILState_STATE gil;
    if (f->flags[0] < level && enter_python(in, &gil)) {
        PyObject *r = call(in, "fmi_refresh", "(i)", (int)level);
        int ok = r && py.IsTrue(r) == 1;
        if (r) py.DecRef(r);
        leave_python(in, gil);
        if (!ok) *status = ST_ERROR;
    } else if (f->flags[0] < level) {
        *status = ST_ERROR;
    }
    for (size_t i = 0; i < nvr; i++) {
        int32_t k = f->kind[vr[i]];
        value[i] = *status != ST_OK ? NAN : k == VR_INPUT ? f->inputs[f->slot[vr[i]]] : f->outputs[f->slot[vr[i]]];
    }
    return 1;
}



/* Set the values of one type through Python: `letter` the type (SHIM_VAR_TYPES), `method` the
   slave's setter, `box` what makes a Python object of a value. */
static Status set_typed(Instance *in, char letter, const char *method, PyObject *(*box)(const void *, size_t),
                        const uint32_t vr[], size_t nvr, const void *values)
{
    if (!refs_ok(in, in->call, vr, nvr, values, letter)) return ST_ERROR;
    if (nvr == 0) return ST_OK;
    return set_values(in, method, vr, nvr, box, values);
}

/* Get the values of one type through Python (`keep`: where the result list is kept while the
   host reads it, or NULL). */
static Status get_typed(Instance *in, char letter, const char *method, int (*unbox)(PyObject *, void *, size_t),
                        const uint32_t vr[], size_t nvr, void *values, PyObject **keep)
{
    if (!refs_ok(in, in->call, vr, nvr, values, letter)) return ST_ERROR;
    if (nvr == 0) return ST_OK;
    GIL_ENTER
    Status s = get_values(in, method, vr, nvr, unbox, values, keep);
    GIL_LEAVE
    return s;
}

Status set_reals(Instance *in, const uint32_t vr[], size_t nvr, const double value[])
{
    if (!refs_ok(in, in->call, vr, nvr, value, 'R')) return ST_ERROR;
    if (nvr == 0 || fast_set(in, vr, nvr, value)) return ST_OK;
    return set_values(in, "set_real", vr, nvr, box_real, value);
}

static Status get_variables(Instance *in, const uint32_t vr[], size_t nvr, double value[])
{
    if (!refs_ok(in, in->call, vr, nvr, value, 'R')) return ST_ERROR;
    Status s = ST_OK;
    if (nvr == 0 || fast_get(in, vr, nvr, value, &s)) return s;
    GIL_ENTER
    s = get_values(in, "get_real", vr, nvr, unbox_real, value, NULL);
    GIL_LEAVE
    return s;
}

/* The Reals of value references `vr`: the FMU's variables, and (FMI 3.0) the independent
   variable time, the FMU's time [s], between runs of them. */
Status get_reals(Instance *in, const uint32_t vr[], size_t nvr, double value[])
{
    if (!SHIM_HAS_TIME || !vr || !value) return get_variables(in, vr, nvr, value);
    Status worst = ST_OK;
    size_t start = 0;
    for (size_t i = 0; i <= nvr; i++) {
        if (i < nvr && vr[i] != SHIM_TIME_VR) continue;
        Status s = i > start ? get_variables(in, vr + start, i - start, value + start) : ST_OK;
        if (s > worst) worst = s;
        if (i < nvr) value[i] = in->last_successful;
        start = i + 1;
    }
    return worst;
}

Status set_strings(Instance *in, const uint32_t vr[], size_t nvr, const char *const value[])
{
    return set_typed(in, 'S', "set_string", box_string, vr, nvr, value);
}

Status get_strings(Instance *in, const uint32_t vr[], size_t nvr, const char *value[])
{
    return get_typed(in, 'S', "get_string", unbox_string, vr, nvr, value, &in->strings);
}

Status set_ints(Instance *in, const uint32_t vr[], size_t nvr, const int value[])
{
    return set_typed(in, 'I', "set_integer", box_integer, vr, nvr, value);
}

Status get_ints(Instance *in, const uint32_t vr[], size_t nvr, int value[])
{
    return get_typed(in, 'I', "get_integer", unbox_integer, vr, nvr, value, NULL);
}

Status set_bools(Instance *in, const uint32_t vr[], size_t nvr, const int value[])
{
    return set_typed(in, 'B', "set_boolean", box_boolean, vr, nvr, value);
}

Status get_bools(Instance *in, const uint32_t vr[], size_t nvr, int value[])
{
    return get_typed(in, 'B', "get_boolean", unbox_boolean, vr, nvr, value, NULL);
}

/* ------------------------------------------------------------------ FMU states */

static Saved *saved_of(Instance *in, void *state)
{
    Saved *s = find_saved(state);
    if (s) return s;
    logf_(in, ST_ERROR, "%s: the state was not made by %s of this FMU (or was freed, or its instance was); "
          "refused, the FMU is unchanged", in->call, in->flavour->state_makers);
    return NULL;
}


/* The state's serialised bytes (with its FMI state and last successful time), made once. */
static PyObject *state_bytes(Instance *in, Saved *s)
{
    if (!s->bytes)
        s->bytes = call(in, "fmi_state_to_bytes", "(Osd)", s->data, state_name(s->state), s->last_successful);
    return s->bytes;
}


Status get_state(Instance *in, void **handle)
{
    if (!handle) {
        logf_(in, ST_ERROR, "%s: NULL state pointer; refused", in->call);
        return ST_ERROR;
    }
    GIL_ENTER
    PyObject *data = call(in, "_get_fmu_state", NULL);
    Status st = data && in->worst < ST_ERROR ? ST_OK : ST_ERROR;
    if (st == ST_OK && !store_saved(in, handle, data, in->state, in->last_successful)) st = ST_ERROR;
    else if (st != ST_OK && data) py.DecRef(data);
    GIL_LEAVE
    return st;
}

/* The slave's state, then, once the slave took it whole, the FMI state and the last successful
   time saved with it: a refused state changes nothing. */
Status set_state(Instance *in, void *handle)
{
    Saved *s = saved_of(in, handle);
    if (!s) return ST_ERROR;
    GIL_ENTER
    Status st = escalate(in, call_status(in, "_set_fmu_state", "(O)", s->data), ST_ERROR);
    GIL_LEAVE
    if (st <= ST_WARNING) {
        in->state = s->state;
        in->last_successful = s->last_successful;
    }
    return st;
}

Status free_state(Instance *in, void **handle)
{
    if (!handle || !*handle) return ST_OK;
    Saved *s = saved_of(in, *handle);
    if (!s) return ST_ERROR;
    if (python_alive()) {
        GIL_ENTER
        free_saved(s, NULL, 1);
        GIL_LEAVE
    } else {
        free_saved(s, NULL, 0);
    }
    *handle = NULL;
    return ST_OK;
}

/* The serialised bytes of the state behind `handle` (Python's lock held): 1 with *data and *n
   set (valid while the state lives), else 0, logged. */
static int bytes_of(Instance *in, Saved *s, char **data, Py_ssize_t *n)
{
    PyObject *b = state_bytes(in, s);
    int ok = b && py.BytesAsStringAndSize(b, data, n) == 0;
    if (!ok) log_exception(in, in->call);
    return ok;
}

Status serialized_size(Instance *in, void *handle, size_t *size)
{
    if (!size) {
        logf_(in, ST_ERROR, "%s: NULL size; refused", in->call);
        return ST_ERROR;
    }
    Saved *s = saved_of(in, handle);
    if (!s) return ST_ERROR;
    GIL_ENTER
    char *data = NULL;
    Py_ssize_t n = 0;
    int ok = bytes_of(in, s, &data, &n);
    GIL_LEAVE
    if (!ok) return ST_ERROR;
    *size = (size_t)n;
    return ST_OK;
}

Status serialize_state(Instance *in, void *handle, char bytes[], size_t size)
{
    if (!bytes) {
        logf_(in, ST_ERROR, "%s: NULL buffer; refused", in->call);
        return ST_ERROR;
    }
    Saved *s = saved_of(in, handle);
    if (!s) return ST_ERROR;
    GIL_ENTER
    char *data = NULL;
    Py_ssize_t n = 0;
    int ok = bytes_of(in, s, &data, &n);
    if (ok && (size_t)n > size) {
        logf_(in, ST_ERROR, "%s: the buffer holds %zu bytes, the state needs %zd; refused", in->call, size, n);
        ok = 0;
    } else if (ok) {
        memcpy(bytes, data, (size_t)n);
    }
    GIL_LEAVE
    return ok ? ST_OK : ST_ERROR;
}

/* The state in `bytes`, checked whole by the slave (GuardedSlave.fmi_state_from_bytes: format,
   FMI state, times, sizes, finite values) before anything is made; into *handle when this
   instance made it, else a new state. */
Status deserialize_state(Instance *in, const char bytes[], size_t size, void **handle)
{
    if (!bytes || !handle) {
        logf_(in, ST_ERROR, "%s: NULL bytes or state pointer; refused", in->call);
        return ST_ERROR;
    }
    if (size == 0 || size > MAX_STATE_BYTES) {
        logf_(in, ST_ERROR, "%s: %zu bytes cannot be a state of this FMU (1 byte to %zu); refused, nothing was read",
              in->call, size, MAX_STATE_BYTES);
        return ST_ERROR;
    }
    GIL_ENTER
    PyObject *b = py.BytesFromStringAndSize(bytes, (Py_ssize_t)size);
    PyObject *r = b ? call(in, "fmi_state_from_bytes", "(O)", b) : NULL;
    PyObject *data = r && py.TupleSize(r) == 3 ? py.TupleGetItem(r, 0) : NULL;
    const char *name = data ? py.AsUTF8(py.TupleGetItem(r, 1)) : NULL;
    State kind = state_of_name(name);
    if (py.ErrOccurred()) py.ErrClear();
    double last = data ? py.FloatAsDouble(py.TupleGetItem(r, 2)) : NAN;
    if (py.ErrOccurred()) py.ErrClear(), last = NAN;
    int ok = kind && isfinite(last) && fabs(last) <= SHIM_TIME_LIMIT && in->worst < ST_ERROR;
    if (r && !ok && in->worst < ST_ERROR)
        logf_(in, ST_ERROR, "%s: the state's FMI state '%.40s' and last successful time %g s are not a state this "
              "FMU can be in; refused", in->call, name ? name : "(none)", last);
    if (ok) {
        py.IncRef(data);
        ok = store_saved(in, handle, data, kind, last);
    }
    if (r) py.DecRef(r);
    if (b) py.DecRef(b);
    GIL_LEAVE
    return ok ? ST_OK : ST_ERROR;
}

/* ------------------------------------------------------------------ derivatives */

/* Every value is a finite number (`v` may be NULL) and, when `with_orders`, there is an order
   array and every order is 1; 0, logged, if not. */
int reals_ok(Instance *in, const char *call, const double v[], int with_orders, const int32_t orders[], size_t n)
{
    if (with_orders && n && !orders) {
        logf_(in, ST_ERROR, "%s: %zu value references but a NULL order array; refused", call, n);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (orders && orders[i] != 1) {
            logf_(in, ST_ERROR, "%s: derivative order %d at position %zu; this FMU gives and takes first derivatives "
                  "only (maxOutputDerivativeOrder 1); nothing was done", call, (int)orders[i], i);
            return 0;
        }
        if (v && !isfinite(v[i])) {
            logf_(in, ST_ERROR, "%s: value %g at position %zu is not a finite number; nothing was done", call, v[i], i);
            return 0;
        }
    }
    return 1;
}

/* A Python list of n Reals. */
static PyObject *real_list(const double v[], size_t n)
{
    PyObject *list = py.ListNew((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *o = py.FloatFromDouble(v[i]);
        if (!o) {
            py.DecRef(list);
            return NULL;
        }
        py.ListSetItem(list, (Py_ssize_t)i, o);
    }
    return list;
}

/* slave.<method>(a, b) with two new references (either may be NULL: the call is not made, the
   exception logged), the result a list of n Reals stored in out (NaN when refused). The slave
   refuses by logging an error and returning None. */
static Status reals_from(Instance *in, const char *method, PyObject *a, PyObject *b, size_t n, double out[])
{
    Status s = ST_ERROR;
    PyObject *list = a && b ? call(in, method, "(OO)", a, b) : NULL;
    if (!a || !b) log_exception(in, method);
    if (a) py.DecRef(a);
    if (b) py.DecRef(b);
    if (list && py.ListSize(list) == (Py_ssize_t)n) {
        s = ST_OK;
        for (size_t i = 0; s == ST_OK && i < n; i++)
            if (!unbox_real(py.ListGetItem(list, (Py_ssize_t)i), out, i)) s = ST_ERROR;
    }
    if (py.ErrOccurred()) py.ErrClear();
    if (s != ST_OK && in->worst < ST_ERROR)
        logf_(in, ST_ERROR, "%s: the FMU gave no %zu values; nothing was computed", in->call, n);
    if (list) py.DecRef(list);
    for (size_t i = 0; s != ST_OK && i < n; i++) out[i] = NAN;
    return s;
}


/* slave.<method>(unknowns, [knowns, seed]) -> n_out Reals in out: the directional derivative
   (method "fmi_directional": d outputs / d inputs times the seed over the knowns, n_seed ==
   n_knowns, n_out == n_unknowns) or the adjoint one ("fmi_adjoint": the seed over the unknowns
   times d outputs / d inputs, n_seed == n_unknowns, n_out == n_knowns), at the current time,
   state and inputs. The unknowns are outputs, the knowns inputs (the slave checks). */
Status directional(Instance *in, const char *method, const uint32_t unknowns[], size_t n_unknowns,
                   const uint32_t knowns[], size_t n_knowns, const double seed[], size_t n_seed, double out[],
                   size_t n_out)
{
    if (!refs_ok(in, in->call, unknowns, n_unknowns, unknowns, 'R') ||
        !refs_ok(in, in->call, knowns, n_knowns, knowns, 'R'))
        return ST_ERROR;
    if ((n_seed && !seed) || (n_out && !out)) {
        logf_(in, ST_ERROR, "%s: %zu value references but a NULL array; refused", in->call, n_seed && !seed ? n_seed
              : n_out);
        return ST_ERROR;
    }
    if (!reals_ok(in, in->call, seed, 0, NULL, n_seed)) return ST_ERROR;
    if (n_out == 0) return ST_OK;
    GIL_ENTER
    PyObject *refs = vr_list(unknowns, n_unknowns), *known = vr_list(knowns, n_knowns);
    PyObject *seed_ = real_list(seed, n_seed), *pair = known && seed_ ? py.ListNew(2) : NULL;
    if (pair) {
        py.ListSetItem(pair, 0, known);
        py.ListSetItem(pair, 1, seed_);
    } else {
        if (known) py.DecRef(known);
        if (seed_) py.DecRef(seed_);
    }
    Status s = reals_from(in, method, refs, pair, n_out, out);
    GIL_LEAVE
    return escalate(in, s, ST_ERROR);
}

/* The first derivatives of Real inputs, for the next step only (FMI 2.0: canInterpolateInputs). */
Status input_derivatives(Instance *in, const uint32_t vr[], size_t nvr, const int32_t order[], const double value[])
{
    if (!refs_ok(in, in->call, vr, nvr, value, 'R') || !reals_ok(in, in->call, value, 1, order, nvr)) return ST_ERROR;
    if (nvr == 0) return ST_OK;
    GIL_ENTER
    PyObject *refs = vr_list(vr, nvr), *vals = real_list(value, nvr);
    Status s = ST_ERROR;
    if (refs && vals)
        s = call_status(in, "fmi_input_derivatives", "(OO)", refs, vals);
    else
        log_exception(in, in->call);
    if (refs) py.DecRef(refs);
    if (vals) py.DecRef(vals);
    GIL_LEAVE
    return escalate(in, s, ST_ERROR);
}

/* The first time derivatives of outputs at the current communication point
   (maxOutputDerivativeOrder 1). */
Status output_derivatives(Instance *in, const uint32_t vr[], size_t nvr, const int32_t order[], double value[])
{
    if (!refs_ok(in, in->call, vr, nvr, value, 'R') || !reals_ok(in, in->call, NULL, 1, order, nvr)) return ST_ERROR;
    if (nvr == 0) return ST_OK;
    GIL_ENTER
    PyObject *refs = vr_list(vr, nvr), *none = py.ListNew(0);
    Status s = reals_from(in, "fmi_output_derivatives", refs, none, nvr, value);
    GIL_LEAVE
    return escalate(in, s, ST_ERROR);
}

/* ------------------------------------------------------------------ the step */

/* The step's arguments: finite times within +-SHIM_TIME_LIMIT, a non-negative step (FMI 3.0:
   positive), from the FMU's own time (its last successful time; the slave checks that too).
   0, logged, if not. */
static int step_ok(Instance *in, double t, double h)
{
    char a[40], b[40];
    int positive = in->flavour->positive_step;
    if (!isfinite(t) || !isfinite(h) || h < 0 || (positive && h == 0) || fabs(t) > SHIM_TIME_LIMIT ||
        fabs(t + h) > SHIM_TIME_LIMIT) {
        logf_(in, ST_ERROR, "%s: the step from t = %g s by %g s is not a finite time within +-%g s and a finite "
              "%s step; refused, the FMU is unchanged", in->call, t, h, SHIM_TIME_LIMIT,
              positive ? "positive" : "non-negative");
        return 0;
    }
    if (fabs(t - in->last_successful) > 1e-9 * fmax(1.0, fabs(in->last_successful))) {
        logf_(in, ST_ERROR, "%s: the step starts at t = %s s but the FMU is at t = %s s; refused, the FMU is "
              "unchanged", in->call, show_time(t, a, sizeof a), show_time(in->last_successful, b, sizeof b));
        return 0;
    }
    return 1;
}

/* One synchronous step. Taken: step complete (Step Mode). Refused by the slave (an input
   refused as NaN, a diverging solver, a step beyond its budget): Discard, the FMU at the start
   of the step, in "step failed" until a saved state is restored or a reset. An exception:
   Error, state "error". */
Status do_step(Instance *in, double t, double h)
{
    if (!step_ok(in, t, h)) return ST_ERROR;
    GIL_ENTER
    PyObject *r = call(in, "do_step", "(dd)", t, h);
    int taken = r ? py.IsTrue(r) : -1;
    if (r) py.DecRef(r);
    GIL_LEAVE
    if (taken == 1) {
        in->last_successful = t + h;
        return in->worst >= ST_WARNING ? ST_WARNING : ST_OK;
    }
    in->state = taken == 0 ? STEP_FAILED : ERROR_STATE;
    return taken == 0 ? ST_DISCARD : ST_ERROR;
}
