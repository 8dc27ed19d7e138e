/*
 * flexmbs FMI 2.0 co-simulation front end (Linux).
 *
 * Compiled per FMU at build time (flexmbs/fmi/frontend.py), with the part it shares with the FMI
 * 3.0 front end (flexmbs_fmi_core.c: everything below but the fmi2* functions themselves), and
 * shipped as the FMU's binaries/linux64/<modelIdentifier>.so. It implements the fmi2* API and runs the FMU's Python
 * slave (a flexmbs_fmu.base.GuardedSlave, written with pythonfmu's Python classes) through
 * Python's C API directly; pythonfmu's own C++ library is not used on Linux. What it does:
 *
 *  - the FMI 2.0 co-simulation state machine (FMI 2.0.4 standard, section 4.2.4; the allowed
 *    calls per state are those of the Modelica Association's Reference-FMUs, src/fmi2Functions.c):
 *    a call out of sequence returns fmi2Error with a logged message naming the call and the
 *    state, and the instance stays as it was. A discarded step leaves the instance in "step
 *    failed": no step and no value set until fmi2SetFMUstate or fmi2Reset; getters answer;
 *  - argument checks: GUID, fmuType (co-simulation only), the resource location (a file: URI
 *    of an existing folder holding the slave module), finite times within +-SHIM_TIME_LIMIT and
 *    step sizes, a step from the FMU's own time, value references in range and of the type of
 *    the call, NULL arrays, state handles (only those this library made and has not freed are
 *    ever read) and serialised sizes;
 *  - FMU states that hold the instance's FMI state and last successful time with the slave's
 *    state, restored together; each belongs to the instance that made it and is freed with it;
 *  - a fast path for the calls a master makes every step: the slave hands over its input,
 *    output and flag arrays and a map of value references to them (GuardedSlave.fmi_fast_path),
 *    taken through Python's buffer protocol, size- and type-checked, the map copied and
 *    bounds-checked, so fmi2SetReal of inputs and fmi2GetReal of outputs run in C; outputs are
 *    computed by one Python call only when a stale one is read (first a cheap level for
 *    positions and velocities, the full evaluation only when an output that needs it is read);
 *  - a Python runtime for C hosts: when the process has none, it starts the one the FMU carries
 *    (a --standalone build), else finds an interpreter that has what the FMU needs (the build
 *    record resources/flexmbs_python.txt, $FLEXMBS_PYTHON, python3 on PATH; "finding a Python
 *    runtime" below), loads its libpython with RTLD_GLOBAL and initialises it with its home and
 *    module paths, so no LD_PRELOAD, PYTHONHOME or PYTHONPATH is needed; when none fits, the
 *    log says what each lacks and the command that installs it. That runtime is finalised at
 *    exit (atexit), before the libraries' own exit handlers. After that (or after a Python
 *    host's runtime finalised) nothing ever calls Python again: a call that needs it is
 *    refused, fmi2FreeInstance frees the C side;
 *  - every Python function is looked up with dlsym once a runtime exists, so the library loads
 *    in a process without libpython and unloads cleanly (no thread, no static destructor);
 *  - errors and warnings are logged even when the host left logging off; info messages follow
 *    the host's loggingOn and categories. Messages that arise while Python's lock is held are
 *    queued and handed to the host's logger only after the lock is released (a logger that takes
 *    a lock of the host's must not wait while holding Python's). A Python exception never
 *    escapes or outlives a call: it becomes fmi2Error with its message logged, and is cleared.
 */

#include <stddef.h>
#include <stdint.h>

#include "flexmbs_fmi_core.h"

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

/* What the core says in this version's words. */
static const Flavour FMI2 = {
    .states = {"instantiated", "initialization mode", "step complete", "step failed", "terminated", "error", "fatal"},
    .instantiate = "fmi2Instantiate",
    .token = "GUID",
    .leave_failed = "restore a saved state with fmi2SetFMUstate, or fmi2Reset",
    .state_makers = "fmi2GetFMUstate or fmi2DeSerializeFMUstate",
    .positive_step = 0,
};

/* ------------------------------------------------------------------ FMI API */

EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                                     fmi2String fmuResourceLocation, const fmi2CallbackFunctions *functions,
                                     fmi2Boolean visible, fmi2Boolean loggingOn)
{
    Instance *in = instance_new(&FMI2, instanceName, functions ? functions->componentEnvironment : NULL,
                                functions ? (Logger2)functions->logger : NULL, NULL, visible == FMI2_TRUE,
                                loggingOn == FMI2_TRUE);
    if (!in) return NULL;
    if (fmuType != fmi2CoSimulation) {
        logf_(in, ST_ERROR, "fmi2Instantiate: this FMU supports co-simulation only; Model Exchange (fmuType %d) "
              "was requested", (int)fmuType);
        instance_free(in);
        return NULL;
    }
    return instance_start(in, fmuGUID, fmuResourceLocation, 1);
}

EXPORT void fmi2FreeInstance(fmi2Component instance)
{
    Instance *in = instance;
    if (!in) return;
    in->call = "fmi2FreeInstance";
    instance_free(in);
}

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component instance, fmi2Boolean loggingOn, size_t nCategories,
                                      const fmi2String categories[])
{
    ENTER("fmi2SetDebugLogging", ANY_LIVE | FATAL_STATE, fmi2Error)
    return (fmi2Status)set_debug_logging(in, loggingOn == FMI2_TRUE, nCategories, categories);
}

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component instance, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                                      fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime)
{
    ENTER("fmi2SetupExperiment", INSTANTIATED, fmi2Error)
    return (fmi2Status)setup_experiment(in, toleranceDefined, tolerance, startTime, stopTimeDefined, stopTime);
}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component instance)
{
    ENTER("fmi2EnterInitializationMode", INSTANTIATED, fmi2Error)
    return (fmi2Status)transition(in, "enter_initialization_mode", INITIALIZATION_MODE);
}

EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component instance)
{
    ENTER("fmi2ExitInitializationMode", INITIALIZATION_MODE, fmi2Error)
    return (fmi2Status)transition(in, "exit_initialization_mode", STEP_COMPLETE);
}

EXPORT fmi2Status fmi2Terminate(fmi2Component instance)
{
    ENTER("fmi2Terminate", MASK_TERMINATE, fmi2Error)
    return (fmi2Status)transition(in, "terminate", TERMINATED);
}

EXPORT fmi2Status fmi2Reset(fmi2Component instance)
{
    ENTER("fmi2Reset", ANY_LIVE, fmi2Error)
    return (fmi2Status)reset_instance(in);
}

/* ------------------------------------------------------------------ values */

/* fmi2Set<Type> and fmi2Get<Type>: allowed in the state masks, then the core's setter/getter. */
#define ACCESS(name, mask, type, op)                                                                \
    EXPORT fmi2Status name(fmi2Component instance, const fmi2ValueReference vr[], size_t nvr, type value[]) \
    {                                                                                               \
        ENTER(#name, mask, fmi2Error)                                                               \
        return (fmi2Status)op(in, vr, nvr, value);                                                  \
    }

ACCESS(fmi2SetReal, MASK_SET, const fmi2Real, set_reals)
ACCESS(fmi2GetReal, MASK_GET, fmi2Real, get_reals)
ACCESS(fmi2SetInteger, MASK_SET, const fmi2Integer, set_ints)
ACCESS(fmi2GetInteger, MASK_GET, fmi2Integer, get_ints)
ACCESS(fmi2SetBoolean, MASK_SET, const fmi2Boolean, set_bools)
ACCESS(fmi2GetBoolean, MASK_GET, fmi2Boolean, get_bools)
ACCESS(fmi2SetString, MASK_SET, const fmi2String, set_strings)
ACCESS(fmi2GetString, MASK_GET, fmi2String, get_strings)

/* ------------------------------------------------------------------ FMU state */

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component instance, fmi2FMUstate *state)
{
    ENTER("fmi2GetFMUstate", ANY_LIVE, fmi2Error)
    return (fmi2Status)get_state(in, state);
}

EXPORT fmi2Status fmi2SetFMUstate(fmi2Component instance, fmi2FMUstate state)
{
    ENTER("fmi2SetFMUstate", ANY_LIVE, fmi2Error)
    return (fmi2Status)set_state(in, state);
}

EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component instance, fmi2FMUstate *state)
{
    ENTER("fmi2FreeFMUstate", ANY_LIVE, fmi2Error)
    return (fmi2Status)free_state(in, state);
}

EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component instance, fmi2FMUstate state, size_t *size)
{
    ENTER("fmi2SerializedFMUstateSize", ANY_LIVE, fmi2Error)
    return (fmi2Status)serialized_size(in, state, size);
}

EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component instance, fmi2FMUstate state, fmi2Byte bytes[], size_t size)
{
    ENTER("fmi2SerializeFMUstate", ANY_LIVE, fmi2Error)
    return (fmi2Status)serialize_state(in, state, bytes, size);
}

EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component instance, const fmi2Byte bytes[], size_t size,
                                          fmi2FMUstate *state)
{
    ENTER("fmi2DeSerializeFMUstate", ANY_LIVE, fmi2Error)
    return (fmi2Status)deserialize_state(in, bytes, size, state);
}

/* ------------------------------------------------------------------ derivatives */

/* dvUnknown = (d outputs / d inputs) dvKnown at the current time, state and inputs
   (providesDirectionalDerivative): the unknowns are outputs, the knowns inputs. */
EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component instance, const fmi2ValueReference vUnknown_ref[],
                                               size_t nUnknown, const fmi2ValueReference vKnown_ref[], size_t nKnown,
                                               const fmi2Real dvKnown[], fmi2Real dvUnknown[])
{
    ENTER("fmi2GetDirectionalDerivative", MASK_DIRECTIONAL, fmi2Error)
    return (fmi2Status)directional(in, "fmi_directional", vUnknown_ref, nUnknown, vKnown_ref, nKnown, dvKnown, nKnown,
                                   dvUnknown, nUnknown);
}

/* The first derivatives of Real inputs, for the next step only (canInterpolateInputs). */
EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component instance, const fmi2ValueReference vr[], size_t nvr,
                                              const fmi2Integer order[], const fmi2Real value[])
{
    ENTER("fmi2SetRealInputDerivatives", MASK_SET, fmi2Error)
    return (fmi2Status)input_derivatives(in, vr, nvr, order, value);
}

/* The first time derivatives of outputs at the current communication point
   (maxOutputDerivativeOrder 1). */
EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component instance, const fmi2ValueReference vr[], size_t nvr,
                                               const fmi2Integer order[], fmi2Real value[])
{
    ENTER("fmi2GetRealOutputDerivatives", MASK_OUTPUT_DERIVATIVES, fmi2Error)
    return (fmi2Status)output_derivatives(in, vr, nvr, order, value);
}

/* ------------------------------------------------------------------ the step */

/* One synchronous step. Taken: step complete. Refused by the slave (an input refused as NaN, a
   diverging solver, a step beyond its budget): fmi2Discard, the FMU at the start of the step,
   in "step failed" until fmi2SetFMUstate or fmi2Reset. An exception: fmi2Error, state "error". */
EXPORT fmi2Status fmi2DoStep(fmi2Component instance, fmi2Real currentCommunicationPoint,
                             fmi2Real communicationStepSize, fmi2Boolean noSetFMUStatePriorToCurrentPoint)
{
    (void)noSetFMUStatePriorToCurrentPoint;
    ENTER("fmi2DoStep", STEP_COMPLETE, fmi2Error)
    return (fmi2Status)do_step(in, currentCommunicationPoint, communicationStepSize);
}

/* Steps are synchronous (canRunAsynchronuously is false): fmi2DoStep never returns fmi2Pending,
   so there is never a step to cancel. A step too long to wait for is refused up front instead
   (the slave's step budget, flexmbs_fmu.base.STEP_BUDGET). */
EXPORT fmi2Status fmi2CancelStep(fmi2Component instance)
{
    Instance *in = instance;
    if (in) logf_(in, ST_ERROR, "fmi2CancelStep: this FMU steps synchronously (canRunAsynchronuously is false): "
                  "no step is ever pending, so none can be cancelled");
    return fmi2Error;
}

/* ------------------------------------------------------------------ status (synchronous steps) */

#define NO_STATUS(name, type, what)                                                               \
    EXPORT fmi2Status name(fmi2Component instance, const fmi2StatusKind s, type *value)             \
    {                                                                                             \
        (void)s, (void)value;                                                                     \
        ENTER(#name, MASK_STATUS, fmi2Error)                                                      \
        logf_(in, ST_DISCARD, "%s: %s", #name, what);                                            \
        return fmi2Discard;                                                                       \
    }

NO_STATUS(fmi2GetStatus, fmi2Status, "this FMU steps synchronously: there is no pending step to ask about")
NO_STATUS(fmi2GetIntegerStatus, fmi2Integer, "no integer status is defined")
NO_STATUS(fmi2GetStringStatus, fmi2String, "this FMU steps synchronously: there is no pending step to describe")

EXPORT fmi2Status fmi2GetRealStatus(fmi2Component instance, const fmi2StatusKind s, fmi2Real *value)
{
    ENTER("fmi2GetRealStatus", MASK_STATUS, fmi2Error)
    if (!value || s != fmi2LastSuccessfulTime) {
        logf_(in, ST_DISCARD, "fmi2GetRealStatus: only fmi2LastSuccessfulTime (with a value pointer) is defined");
        return fmi2Discard;
    }
    *value = in->last_successful;
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component instance, const fmi2StatusKind s, fmi2Boolean *value)
{
    ENTER("fmi2GetBooleanStatus", MASK_STATUS, fmi2Error)
    if (!value || s != fmi2Terminated) {
        logf_(in, ST_DISCARD, "fmi2GetBooleanStatus: only fmi2Terminated (with a value pointer) is defined");
        return fmi2Discard;
    }
    *value = 0;   /* a refused step may be retried; the FMU never asks to end the simulation */
    return fmi2OK;
}
