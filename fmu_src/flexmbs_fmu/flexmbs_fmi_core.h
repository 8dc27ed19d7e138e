/*
 * flexmbs FMU front ends: what the FMI 2.0 (flexmbs_fmi2.c) and FMI 3.0 (flexmbs_fmi3.c)
 * co-simulation front ends share, implemented in flexmbs_fmi_core.c and linked into each FMU's
 * binary with the one front end of its FMI version. Neither header nor core names an FMI type:
 * statuses are numbered as both standards number them (OK 0, Warning 1, Discard 2, Error 3,
 * Fatal 4), value references are 32-bit unsigned in both, Reals/Float64 are doubles.
 *
 * What the core does (the front ends' header comments say what each adds):
 *  - finds and starts a Python runtime in a C host, takes and releases Python's lock, and never
 *    calls Python once the runtime is finalised;
 *  - creates the FMU's Python slave (flexmbs_fmu.base.GuardedSlave) and calls it;
 *  - the log: errors and warnings always reach the host, information as the host asks;
 *    messages that arise while Python's lock is held are queued and delivered after it is
 *    released;
 *  - the co-simulation state machine shared by both versions (Instantiated, Initialization
 *    Mode, Step Mode / step complete, step failed after a discarded step, Terminated) and every
 *    argument check;
 *  - the fast path for inputs and outputs, the saved-state store (handles checked against a
 *    list, never read), serialisation, derivatives and the step.
 */

#ifndef FLEXMBS_FMI_CORE_H
#define FLEXMBS_FMI_CORE_H

#include <stddef.h>
#include <stdint.h>

#include <Python.h>

#include "flexmbs_shim_config.h" /* SHIM_GUID, SHIM_VAR_TYPES, SHIM_MODULE, SHIM_CLASS, SHIM_RECORD, SHIM_TIME_LIMIT */

#define EXPORT __attribute__((visibility("default")))

/* FMI 3.0's independent variable `time` [s]: its value reference (after the FMU's own
   variables, set by the FMI 3.0 build's configuration), read by the Real getter only. */
#ifdef SHIM_TIME_VR
#define SHIM_HAS_TIME 1
#else
#define SHIM_HAS_TIME 0
#define SHIM_TIME_VR UINT32_MAX
#endif

/* A call's status, numbered as fmi2Status and fmi3Status are. */
typedef enum { ST_OK, ST_WARNING, ST_DISCARD, ST_ERROR, ST_FATAL } Status;

/* ------------------------------------------------------------------ states */

typedef enum {
    INSTANTIATED = 1 << 0,
    INITIALIZATION_MODE = 1 << 1,
    STEP_COMPLETE = 1 << 2, /* FMI 3.0: Step Mode */
    STEP_FAILED = 1 << 3, /* a step was discarded: the FMU is at its start, until a state is restored or a reset */
    TERMINATED = 1 << 4,
    ERROR_STATE = 1 << 5,
    FATAL_STATE = 1 << 6,
} State;
#define N_STATES 7

/* The calls allowed per state, as in the Reference-FMUs (src/fmi2Functions.c, MASK_fmi2*; the
   FMI 3.0 front end uses the same sets for the calls both versions have). */
#define ANY_LIVE (INSTANTIATED | INITIALIZATION_MODE | STEP_COMPLETE | STEP_FAILED | TERMINATED | ERROR_STATE)
#define MASK_SET (INSTANTIATED | INITIALIZATION_MODE | STEP_COMPLETE)
#define MASK_GET (INITIALIZATION_MODE | STEP_COMPLETE | STEP_FAILED | TERMINATED | ERROR_STATE)
#define MASK_STATUS (STEP_COMPLETE | STEP_FAILED | TERMINATED)
#define MASK_TERMINATE (STEP_COMPLETE | STEP_FAILED)
/* Derivatives are asked for after initialisation has begun (the co-simulation state tables). */
#define MASK_DIRECTIONAL MASK_GET
#define MASK_OUTPUT_DERIVATIVES (STEP_COMPLETE | STEP_FAILED | TERMINATED | ERROR_STATE)

/* What differs between the FMI versions in what the core says and does. */
typedef struct {
    const char *states[N_STATES];   /* each state as this version's standard names it, by bit */
    const char *instantiate;        /* the instantiating call, for messages */
    const char *token;              /* what the instantiation token is called: "GUID" */
    const char *leave_failed;       /* how to leave "step failed" */
    const char *state_makers;       /* the calls that make FMU states */
    int positive_step;              /* a step of 0 s is refused (FMI 3.0), else taken (FMI 2.0) */
} Flavour;

/* The host's logger: FMI 2.0's takes a printf format and the instance name, FMI 3.0's neither. */
typedef void (*Logger2)(void *env, const char *name, int status, const char *category, const char *message, ...);
typedef void (*Logger3)(void *env, int status, const char *category, const char *message);

/* ------------------------------------------------------------------ the instance */

/* Kinds of value reference in the fast-path map (GuardedSlave.fmi_fast_path). */
enum { VR_SLOW = 0, VR_INPUT = 1, VR_STATE_OUTPUT = 2, VR_OUTPUT = 3 };

typedef struct {
    int on;                   /* the views are held and the map checked: calls may use it */
    Py_buffer views[3];       /* inputs, outputs, flags: held, so the arrays can be neither freed nor resized */
    double *inputs;           /* Real inputs, by input slot (the slave's array) */
    double *outputs;          /* Real outputs, by output slot */
    size_t n_inputs, n_outputs;
    int64_t *flags;           /* [0] outputs valid up to level 0/1/2, [1] refused inputs pending */
    int32_t *kind;            /* per value reference: VR_* (a checked copy of the slave's map) */
    int32_t *slot;            /* per value reference: slot in inputs or outputs (checked copy) */
} Fast;

/* A message waiting for Python's lock to be released before it goes to the host's logger. */
typedef struct Message {
    struct Message *next;
    Status status;
    char *category;
    char *text;
} Message;

typedef struct {
    State state;
    const char *call;             /* the FMI function being run (for messages) */
    const Flavour *flavour;
    char *name;
    void *env;                    /* the host's environment pointer, handed back to its logger */
    Logger2 logger2;              /* the host's logger (one of the two) */
    Logger3 logger3;
    int logging_on;
    size_t n_categories;
    char **categories;
    int visible;
    char resources[4096];
    PyObject *slave;              /* the Python slave (a GuardedSlave) */
    PyObject *log_queue;          /* its list of pending messages */
    PyObject *strings;            /* the last string getter's result, kept while the host reads it */
    Fast fast;                    /* fast.on == 0: no fast path */
    double last_successful;       /* [s] end of the last step taken (the FMU's time) */
    Status worst;                 /* the worst status the slave logged during the current call */
    int in_python;                /* this instance's call holds Python's lock: messages wait */
    Message *queue, **queue_end;  /* the messages waiting */
} Instance;

/* The instance behind a host's handle, with the call named and allowed in its state (else the
   refusal logged and the front end returns its Error status). */
#define ENTER(name, mask, error)              \
    Instance *in = instance;                  \
    if (!in) return error;                    \
    in->call = name;                          \
    if (!allowed(in, name, mask)) return error;

/* ------------------------------------------------------------------ the core's calls */

/* log and checks */
void logf_(Instance *in, Status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int allowed(Instance *in, const char *call, int mask);
int refs_ok(Instance *in, const char *call, const uint32_t vr[], size_t nvr, const void *values, char type);
int reals_ok(Instance *in, const char *call, const double v[], int with_orders, const int32_t orders[], size_t n);

/* the instance's life */
Instance *instance_new(const Flavour *flavour, const char *name, void *env, Logger2 logger2, Logger3 logger3,
                       int visible, int logging_on);
Instance *instance_start(Instance *in, const char *token, const char *resources, int uri);
void instance_free(Instance *in);
Status set_debug_logging(Instance *in, int on, size_t n, const char *const categories[]);
Status setup_experiment(Instance *in, int tolerance_defined, double tolerance, double start, int stop_defined,
                        double stop);
Status transition(Instance *in, const char *method, State next);
Status reset_instance(Instance *in);
Status do_step(Instance *in, double t, double h);

/* values */
Status set_reals(Instance *in, const uint32_t vr[], size_t nvr, const double value[]);
Status get_reals(Instance *in, const uint32_t vr[], size_t nvr, double value[]);
Status set_strings(Instance *in, const uint32_t vr[], size_t nvr, const char *const value[]);
Status get_strings(Instance *in, const uint32_t vr[], size_t nvr, const char *value[]);
Status set_ints(Instance *in, const uint32_t vr[], size_t nvr, const int value[]);
Status get_ints(Instance *in, const uint32_t vr[], size_t nvr, int value[]);
Status set_bools(Instance *in, const uint32_t vr[], size_t nvr, const int value[]);
Status get_bools(Instance *in, const uint32_t vr[], size_t nvr, int value[]);

/* FMU states */
Status get_state(Instance *in, void **handle);
Status set_state(Instance *in, void *handle);
Status free_state(Instance *in, void **handle);
Status serialized_size(Instance *in, void *handle, size_t *size);
Status serialize_state(Instance *in, void *handle, char bytes[], size_t size);
Status deserialize_state(Instance *in, const char bytes[], size_t size, void **handle);

/* derivatives */
Status directional(Instance *in, const char *method, const uint32_t unknowns[], size_t n_unknowns,
                   const uint32_t knowns[], size_t n_knowns, const double seed[], size_t n_seed, double out[],
                   size_t n_out);
Status input_derivatives(Instance *in, const uint32_t vr[], size_t nvr, const int32_t order[], const double value[]);
Status output_derivatives(Instance *in, const uint32_t vr[], size_t nvr, const int32_t order[], double value[]);

#endif
