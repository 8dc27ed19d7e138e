/*
 * flexmbs FMI 3.0 co-simulation front end (Linux).
 *
 * Compiled per FMU at build time (flexmbs/fmi/frontend.py) with the part it shares with the FMI
 * 2.0 front end (flexmbs_fmi_core.c: the Python runtime, the slave calls, the log queue, the
 * state machine, argument checks, the fast path, FMU states, derivatives and the step), and
 * shipped as the FMU's binaries/x86_64-linux/<modelIdentifier>.so. The same Python slave runs
 * under both front ends, so the same calls give the same values, bit for bit.
 *
 * What this file adds is the fmi3* API (Modelica Association, "Functional Mock-up Interface
 * Specification 3.0", 2022: section 2.2, general mechanisms; section 2.3, the common state
 * machine; section 4.2, the co-simulation state machine and Step Mode), on the co-simulation
 * state machine without Event Mode:
 *
 *  - fmi3InstantiateCoSimulation -> Instantiated; fmi3EnterInitializationMode (which also takes
 *    the experiment's start and stop times and tolerance, as fmi2SetupExperiment did) ->
 *    Initialization Mode; fmi3ExitInitializationMode -> Step Mode (eventModeUsed is false);
 *    fmi3DoStep in Step Mode; fmi3Terminate -> Terminated; fmi3Reset -> Instantiated;
 *  - a discarded step (fmi3Discard) leaves the FMU at the start of that step, in "step
 *    discarded": no step and no value set until fmi3SetFMUState or fmi3Reset (as the
 *    Reference-FMUs' StepDiscarded); getters answer;
 *  - the allowed calls per state are those of the FMI 2.0 front end for the calls both versions
 *    have (flexmbs_fmi_core.h), but that fmi3GetFloat64 and fmi3GetString also answer in
 *    Instantiated (section 2.3.2: the start values; outputs of the start state); a call out of
 *    sequence returns fmi3Error with a logged message;
 *  - fmi3DoStep takes positive steps only (section 4.2.1) and writes its four out-arguments on
 *    every return: no event handling needed, no
 *    termination asked for, no early return (the FMU never returns early:
 *    mightReturnEarlyFromDoStep is false), and lastSuccessfulTime, the FMU's time after the call;
 *  - every variable is a scalar Float64 or String (value references, names and units as in the
 *    FMI 2.0 FMU); nValues must equal the number of value references; calls for the other
 *    types are refused for any value reference (this FMU has none of them);
 *  - fmi3GetDirectionalDerivative and fmi3GetAdjointDerivative of outputs with respect to
 *    inputs, fmi3GetOutputDerivatives of first order; input derivatives are not FMI 3.0 calls
 *    (they would be variables) and are not offered;
 *  - refused at every call, with a logged reason: Event Mode (instantiation with eventModeUsed,
 *    fmi3EnterEventMode, fmi3EnterStepMode, discrete-state updates), Configuration Mode, clocks,
 *    intermediate updates (requiredIntermediateVariables), per-element dependencies (read the
 *    ModelStructure of modelDescription.xml), Model Exchange and Scheduled Execution.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flexmbs_fmi_core.h"

/* ------------------------------------------------------------------ FMI 3.0 types (ABI) */

typedef void *fmi3Instance;
typedef void *fmi3InstanceEnvironment;
typedef void *fmi3FMUState;
typedef uint32_t fmi3ValueReference;
typedef float fmi3Float32;
typedef double fmi3Float64;
typedef int8_t fmi3Int8;
typedef uint8_t fmi3UInt8;
typedef int16_t fmi3Int16;
typedef uint16_t fmi3UInt16;
typedef int32_t fmi3Int32;
typedef uint32_t fmi3UInt32;
typedef int64_t fmi3Int64;
typedef uint64_t fmi3UInt64;
typedef bool fmi3Boolean;
typedef char fmi3Char;
typedef const fmi3Char *fmi3String;
typedef uint8_t fmi3Byte;
typedef const fmi3Byte *fmi3Binary;
typedef bool fmi3Clock;

typedef enum { fmi3OK, fmi3Warning, fmi3Discard, fmi3Error, fmi3Fatal } fmi3Status;
typedef enum { fmi3Independent, fmi3Constant, fmi3Fixed, fmi3Tunable, fmi3Discrete, fmi3Dependent } fmi3DependencyKind;
typedef enum { fmi3IntervalNotYetKnown, fmi3IntervalUnchanged, fmi3IntervalChanged } fmi3IntervalQualifier;

typedef void (*fmi3LogMessageCallback)(fmi3InstanceEnvironment, fmi3Status, fmi3String, fmi3String);
typedef void (*fmi3ClockUpdateCallback)(fmi3InstanceEnvironment);
typedef void (*fmi3IntermediateUpdateCallback)(fmi3InstanceEnvironment, fmi3Float64, fmi3Boolean, fmi3Boolean,
                                               fmi3Boolean, fmi3Boolean, fmi3Boolean *, fmi3Float64 *);
typedef void (*fmi3LockPreemptionCallback)(void);
typedef void (*fmi3UnlockPreemptionCallback)(void);

/* What the core says in this version's words (state names as the Reference-FMUs'). */
static const Flavour FMI3 = {
    .states = {"instantiated", "initialization mode", "step mode", "step discarded", "terminated", "error", "fatal"},
    .instantiate = "fmi3InstantiateCoSimulation",
    .token = "instantiation token",
    .leave_failed = "restore a saved state with fmi3SetFMUState, or fmi3Reset",
    .state_makers = "fmi3GetFMUState or fmi3DeserializeFMUState",
    .positive_step = 1,   /* section 4.2.1: communicationStepSize must be > 0 */
};

/* Every variable is a scalar: one value per value reference (section 2.2.7.2). 0, logged, if not. */
static int scalars(Instance *in, size_t nvr, size_t n_values)
{
    if (n_values == nvr) return 1;
    logf_(in, ST_ERROR, "%s: %zu values for %zu value references; every variable of this FMU is a scalar, so "
          "they must be equal; nothing was done", in->call, n_values, nvr);
    return 0;
}

/* ------------------------------------------------------------------ instances (section 2.3.1) */

EXPORT const char *fmi3GetVersion(void) { return "3.0"; }

EXPORT fmi3Instance fmi3InstantiateCoSimulation(fmi3String instanceName, fmi3String instantiationToken,
                                                fmi3String resourcePath, fmi3Boolean visible, fmi3Boolean loggingOn,
                                                fmi3Boolean eventModeUsed, fmi3Boolean earlyReturnAllowed,
                                                const fmi3ValueReference requiredIntermediateVariables[],
                                                size_t nRequiredIntermediateVariables,
                                                fmi3InstanceEnvironment instanceEnvironment,
                                                fmi3LogMessageCallback logMessage,
                                                fmi3IntermediateUpdateCallback intermediateUpdate)
{
    (void)earlyReturnAllowed, (void)requiredIntermediateVariables, (void)intermediateUpdate;
    Instance *in = instance_new(&FMI3, instanceName, instanceEnvironment, NULL, (Logger3)logMessage, visible,
                                loggingOn);
    if (!in) return NULL;
    const char *why = eventModeUsed ? "eventModeUsed is true, but this FMU has no Event Mode (hasEventMode is "
                                      "false): instantiate it with eventModeUsed false"
                      : nRequiredIntermediateVariables ? "intermediate variables were asked for, but this FMU gives "
                                                         "no intermediate updates (providesIntermediateUpdate is false)"
                                                       : NULL;
    if (why) {
        logf_(in, ST_ERROR, "fmi3InstantiateCoSimulation: %s", why);
        instance_free(in);
        return NULL;
    }
    return instance_start(in, instantiationToken, resourcePath, 0);
}

/* Only co-simulation: the other interface types say why through the host's logger. */
static void not_this_type(fmi3InstanceEnvironment env, fmi3LogMessageCallback log, const char *call)
{
    char text[200];
    snprintf(text, sizeof text, "%s: this FMU supports co-simulation only (fmi3InstantiateCoSimulation)", call);
    if (log) log(env, fmi3Error, "logStatusError", text);
}

EXPORT fmi3Instance fmi3InstantiateModelExchange(fmi3String instanceName, fmi3String instantiationToken,
                                                 fmi3String resourcePath, fmi3Boolean visible, fmi3Boolean loggingOn,
                                                 fmi3InstanceEnvironment instanceEnvironment,
                                                 fmi3LogMessageCallback logMessage)
{
    (void)instanceName, (void)instantiationToken, (void)resourcePath, (void)visible, (void)loggingOn;
    not_this_type(instanceEnvironment, logMessage, "fmi3InstantiateModelExchange");
    return NULL;
}

EXPORT fmi3Instance fmi3InstantiateScheduledExecution(fmi3String instanceName, fmi3String instantiationToken,
                                                      fmi3String resourcePath, fmi3Boolean visible,
                                                      fmi3Boolean loggingOn, fmi3InstanceEnvironment instanceEnvironment,
                                                      fmi3LogMessageCallback logMessage,
                                                      fmi3ClockUpdateCallback clockUpdate,
                                                      fmi3LockPreemptionCallback lockPreemption,
                                                      fmi3UnlockPreemptionCallback unlockPreemption)
{
    (void)instanceName, (void)instantiationToken, (void)resourcePath, (void)visible, (void)loggingOn;
    (void)clockUpdate, (void)lockPreemption, (void)unlockPreemption;
    not_this_type(instanceEnvironment, logMessage, "fmi3InstantiateScheduledExecution");
    return NULL;
}

EXPORT void fmi3FreeInstance(fmi3Instance instance)
{
    Instance *in = instance;
    if (!in) return;
    in->call = "fmi3FreeInstance";
    instance_free(in);
}

EXPORT fmi3Status fmi3SetDebugLogging(fmi3Instance instance, fmi3Boolean loggingOn, size_t nCategories,
                                      const fmi3String categories[])
{
    ENTER("fmi3SetDebugLogging", ANY_LIVE | FATAL_STATE, fmi3Error)
    return (fmi3Status)set_debug_logging(in, loggingOn, nCategories, categories);
}

/* ------------------------------------------------------------------ modes (sections 2.3.2, 2.3.3, 2.3.8) */

/* The experiment (checked as fmi2SetupExperiment's arguments are), then Initialization Mode. */
EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance instance, fmi3Boolean toleranceDefined,
                                              fmi3Float64 tolerance, fmi3Float64 startTime,
                                              fmi3Boolean stopTimeDefined, fmi3Float64 stopTime)
{
    ENTER("fmi3EnterInitializationMode", INSTANTIATED, fmi3Error)
    Status s = setup_experiment(in, toleranceDefined, tolerance, startTime, stopTimeDefined, stopTime);
    if (s > ST_WARNING) return (fmi3Status)s;
    Status t = transition(in, "enter_initialization_mode", INITIALIZATION_MODE);
    return (fmi3Status)(t > s ? t : s);
}

/* Without Event Mode, leaving Initialization Mode enters Step Mode (section 2.3.3). */
EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance instance)
{
    ENTER("fmi3ExitInitializationMode", INITIALIZATION_MODE, fmi3Error)
    return (fmi3Status)transition(in, "exit_initialization_mode", STEP_COMPLETE);
}

EXPORT fmi3Status fmi3Terminate(fmi3Instance instance)
{
    ENTER("fmi3Terminate", MASK_TERMINATE, fmi3Error)
    return (fmi3Status)transition(in, "terminate", TERMINATED);
}

EXPORT fmi3Status fmi3Reset(fmi3Instance instance)
{
    ENTER("fmi3Reset", ANY_LIVE, fmi3Error)
    return (fmi3Status)reset_instance(in);
}

/* ------------------------------------------------------------------ values (section 2.2.7.2) */

/* fmi3GetFloat64 ... fmi3SetString: allowed in the state masks, scalars, then the core's call. */
#define ACCESS(name, mask, type, op)                                                                      \
    EXPORT fmi3Status name(fmi3Instance instance, const fmi3ValueReference vr[], size_t nvr, type values[], \
                           size_t nValues)                                                                \
    {                                                                                                     \
        ENTER(#name, mask, fmi3Error)                                                                     \
        if (!scalars(in, nvr, nValues)) return fmi3Error;                                                 \
        return (fmi3Status)op(in, vr, nvr, values);                                                       \
    }

ACCESS(fmi3GetFloat64, MASK_GET | INSTANTIATED, fmi3Float64, get_reals)
ACCESS(fmi3SetFloat64, MASK_SET, const fmi3Float64, set_reals)
ACCESS(fmi3GetString, MASK_GET | INSTANTIATED, fmi3String, get_strings)
ACCESS(fmi3SetString, MASK_SET, const fmi3String, set_strings)

/* A type of which this FMU has no variable: every value reference is refused (nothing is read
   or set), no value reference at all is a call that does nothing. */
static fmi3Status none_of_type(Instance *in, const fmi3ValueReference vr[], size_t nvr, const void *values)
{
    return refs_ok(in, in->call, vr, nvr, values, '-') ? fmi3OK : fmi3Error;
}

#define NONE_OF_TYPE(get, set, type)                                                                     \
    EXPORT fmi3Status get(fmi3Instance instance, const fmi3ValueReference vr[], size_t nvr, type values[], \
                          size_t nValues)                                                                \
    {                                                                                                    \
        ENTER(#get, MASK_GET, fmi3Error)                                                                 \
        return scalars(in, nvr, nValues) ? none_of_type(in, vr, nvr, values) : fmi3Error;               \
    }                                                                                                    \
    EXPORT fmi3Status set(fmi3Instance instance, const fmi3ValueReference vr[], size_t nvr,              \
                          const type values[], size_t nValues)                                           \
    {                                                                                                    \
        ENTER(#set, MASK_SET, fmi3Error)                                                                 \
        return scalars(in, nvr, nValues) ? none_of_type(in, vr, nvr, values) : fmi3Error;               \
    }

NONE_OF_TYPE(fmi3GetFloat32, fmi3SetFloat32, fmi3Float32)
NONE_OF_TYPE(fmi3GetInt8, fmi3SetInt8, fmi3Int8)
NONE_OF_TYPE(fmi3GetUInt8, fmi3SetUInt8, fmi3UInt8)
NONE_OF_TYPE(fmi3GetInt16, fmi3SetInt16, fmi3Int16)
NONE_OF_TYPE(fmi3GetUInt16, fmi3SetUInt16, fmi3UInt16)
NONE_OF_TYPE(fmi3GetInt32, fmi3SetInt32, fmi3Int32)
NONE_OF_TYPE(fmi3GetUInt32, fmi3SetUInt32, fmi3UInt32)
NONE_OF_TYPE(fmi3GetInt64, fmi3SetInt64, fmi3Int64)
NONE_OF_TYPE(fmi3GetUInt64, fmi3SetUInt64, fmi3UInt64)
NONE_OF_TYPE(fmi3GetBoolean, fmi3SetBoolean, fmi3Boolean)

EXPORT fmi3Status fmi3GetBinary(fmi3Instance instance, const fmi3ValueReference vr[], size_t nvr,
                                size_t valueSizes[], fmi3Binary values[], size_t nValues)
{
    ENTER("fmi3GetBinary", MASK_GET, fmi3Error)
    (void)valueSizes;
    return scalars(in, nvr, nValues) ? none_of_type(in, vr, nvr, values) : fmi3Error;
}

EXPORT fmi3Status fmi3SetBinary(fmi3Instance instance, const fmi3ValueReference vr[], size_t nvr,
                                const size_t valueSizes[], const fmi3Binary values[], size_t nValues)
{
    ENTER("fmi3SetBinary", MASK_SET, fmi3Error)
    (void)valueSizes;
    return scalars(in, nvr, nValues) ? none_of_type(in, vr, nvr, values) : fmi3Error;
}

EXPORT fmi3Status fmi3GetClock(fmi3Instance instance, const fmi3ValueReference vr[], size_t nvr, fmi3Clock values[])
{
    ENTER("fmi3GetClock", ANY_LIVE, fmi3Error)
    return none_of_type(in, vr, nvr, values);
}

EXPORT fmi3Status fmi3SetClock(fmi3Instance instance, const fmi3ValueReference vr[], size_t nvr,
                               const fmi3Clock values[])
{
    ENTER("fmi3SetClock", ANY_LIVE, fmi3Error)
    return none_of_type(in, vr, nvr, values);
}

/* ------------------------------------------------------------------ FMU state (section 2.2.7.4) */

EXPORT fmi3Status fmi3GetFMUState(fmi3Instance instance, fmi3FMUState *FMUState)
{
    ENTER("fmi3GetFMUState", ANY_LIVE, fmi3Error)
    return (fmi3Status)get_state(in, FMUState);
}

EXPORT fmi3Status fmi3SetFMUState(fmi3Instance instance, fmi3FMUState FMUState)
{
    ENTER("fmi3SetFMUState", ANY_LIVE, fmi3Error)
    return (fmi3Status)set_state(in, FMUState);
}

EXPORT fmi3Status fmi3FreeFMUState(fmi3Instance instance, fmi3FMUState *FMUState)
{
    ENTER("fmi3FreeFMUState", ANY_LIVE, fmi3Error)
    return (fmi3Status)free_state(in, FMUState);
}

EXPORT fmi3Status fmi3SerializedFMUStateSize(fmi3Instance instance, fmi3FMUState FMUState, size_t *size)
{
    ENTER("fmi3SerializedFMUStateSize", ANY_LIVE, fmi3Error)
    return (fmi3Status)serialized_size(in, FMUState, size);
}

EXPORT fmi3Status fmi3SerializeFMUState(fmi3Instance instance, fmi3FMUState FMUState, fmi3Byte serializedState[],
                                        size_t size)
{
    ENTER("fmi3SerializeFMUState", ANY_LIVE, fmi3Error)
    return (fmi3Status)serialize_state(in, FMUState, (char *)serializedState, size);
}

EXPORT fmi3Status fmi3DeserializeFMUState(fmi3Instance instance, const fmi3Byte serializedState[], size_t size,
                                          fmi3FMUState *FMUState)
{
    ENTER("fmi3DeserializeFMUState", ANY_LIVE, fmi3Error)
    return (fmi3Status)deserialize_state(in, (const char *)serializedState, size, FMUState);
}

/* ------------------------------------------------------------------ derivatives (sections 2.2.12, 4.2.1) */

/* sensitivity = (d outputs / d inputs) seed, the unknowns outputs, the knowns inputs, at the
   current time, state and inputs (providesDirectionalDerivative). Scalars: nSeed == nKnowns,
   nSensitivity == nUnknowns. */
EXPORT fmi3Status fmi3GetDirectionalDerivative(fmi3Instance instance, const fmi3ValueReference unknowns[],
                                               size_t nUnknowns, const fmi3ValueReference knowns[], size_t nKnowns,
                                               const fmi3Float64 seed[], size_t nSeed, fmi3Float64 sensitivity[],
                                               size_t nSensitivity)
{
    ENTER("fmi3GetDirectionalDerivative", MASK_DIRECTIONAL, fmi3Error)
    if (!scalars(in, nKnowns, nSeed) || !scalars(in, nUnknowns, nSensitivity)) return fmi3Error;
    return (fmi3Status)directional(in, "fmi_directional", unknowns, nUnknowns, knowns, nKnowns, seed, nSeed,
                                   sensitivity, nSensitivity);
}

/* sensitivity = seed^T (d outputs / d inputs), the seed over the unknowns (outputs), the
   sensitivity over the knowns (inputs) (providesAdjointDerivatives). Scalars: nSeed ==
   nUnknowns, nSensitivity == nKnowns. */
EXPORT fmi3Status fmi3GetAdjointDerivative(fmi3Instance instance, const fmi3ValueReference unknowns[],
                                           size_t nUnknowns, const fmi3ValueReference knowns[], size_t nKnowns,
                                           const fmi3Float64 seed[], size_t nSeed, fmi3Float64 sensitivity[],
                                           size_t nSensitivity)
{
    ENTER("fmi3GetAdjointDerivative", MASK_DIRECTIONAL, fmi3Error)
    if (!scalars(in, nUnknowns, nSeed) || !scalars(in, nKnowns, nSensitivity)) return fmi3Error;
    return (fmi3Status)directional(in, "fmi_adjoint", unknowns, nUnknowns, knowns, nKnowns, seed, nSeed, sensitivity,
                                   nSensitivity);
}

/* The first time derivatives of outputs at the current communication point
   (maxOutputDerivativeOrder 1). */
EXPORT fmi3Status fmi3GetOutputDerivatives(fmi3Instance instance, const fmi3ValueReference vr[], size_t nvr,
                                           const fmi3Int32 orders[], fmi3Float64 values[], size_t nValues)
{
    ENTER("fmi3GetOutputDerivatives", MASK_OUTPUT_DERIVATIVES, fmi3Error)
    if (!scalars(in, nvr, nValues)) return fmi3Error;
    return (fmi3Status)output_derivatives(in, vr, nvr, orders, values);
}

/* ------------------------------------------------------------------ the step (section 4.2.1) */

/* One synchronous step (see the core's do_step). The out-arguments are written on every
   return, a refused call included: no event, no termination, no early return, and the FMU's
   time after the call (the end of a step taken, the start of one discarded or refused). */
EXPORT fmi3Status fmi3DoStep(fmi3Instance instance, fmi3Float64 currentCommunicationPoint,
                             fmi3Float64 communicationStepSize, fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                             fmi3Boolean *eventHandlingNeeded, fmi3Boolean *terminateSimulation,
                             fmi3Boolean *earlyReturn, fmi3Float64 *lastSuccessfulTime)
{
    (void)noSetFMUStatePriorToCurrentPoint;
    fmi3Boolean *flags[3] = {eventHandlingNeeded, terminateSimulation, earlyReturn};
    for (int i = 0; i < 3; i++)
        if (flags[i]) *flags[i] = false;
    const Instance *known = instance;
    if (lastSuccessfulTime) *lastSuccessfulTime = known ? known->last_successful : currentCommunicationPoint;
    ENTER("fmi3DoStep", STEP_COMPLETE, fmi3Error)
    if (!eventHandlingNeeded || !terminateSimulation || !earlyReturn || !lastSuccessfulTime) {
        logf_(in, ST_ERROR, "fmi3DoStep: an out-argument (eventHandlingNeeded, terminateSimulation, earlyReturn or "
              "lastSuccessfulTime) is NULL; refused, the FMU is unchanged");
        return fmi3Error;
    }
    fmi3Status s = (fmi3Status)do_step(in, currentCommunicationPoint, communicationStepSize);
    *lastSuccessfulTime = in->last_successful;
    return s;
}

/* ------------------------------------------------------------------ what this FMU does not offer */

/* A call this FMU refuses in every state, with the reason logged. */
#define REFUSED(name, why, ...)                                               \
    EXPORT fmi3Status name(__VA_ARGS__)                                       \
    {                                                                         \
        Instance *in = instance;                                              \
        if (!in) return fmi3Error;                                            \
        in->call = #name;                                                     \
        logf_(in, ST_ERROR, "%s: %s; refused, the FMU is unchanged", #name, why); \
        return fmi3Error;                                                     \
    }

#define NO_EVENTS "this FMU has no Event Mode (hasEventMode is false; it is instantiated with eventModeUsed false)"
#define NO_CLOCKS "this FMU has no clocks"
#define NO_CONFIGURATION "this FMU has no structural parameters to configure (no Configuration Mode)"
#define NO_ME "this FMU supports co-simulation only, not Model Exchange"

/* the arguments: the instance and what follows it */
#define ALONE fmi3Instance instance
#define AND fmi3Instance instance,

REFUSED(fmi3EnterEventMode, NO_EVENTS, ALONE)
REFUSED(fmi3EnterStepMode, NO_EVENTS ": fmi3ExitInitializationMode enters Step Mode", ALONE)
REFUSED(fmi3EvaluateDiscreteStates, NO_EVENTS, ALONE)
REFUSED(fmi3UpdateDiscreteStates, NO_EVENTS, AND fmi3Boolean *discreteStatesNeedUpdate, fmi3Boolean *terminateSimulation,
        fmi3Boolean *nominalsOfContinuousStatesChanged, fmi3Boolean *valuesOfContinuousStatesChanged,
        fmi3Boolean *nextEventTimeDefined, fmi3Float64 *nextEventTime)
REFUSED(fmi3EnterConfigurationMode, NO_CONFIGURATION, ALONE)
REFUSED(fmi3ExitConfigurationMode, NO_CONFIGURATION, ALONE)
REFUSED(fmi3GetNumberOfVariableDependencies, "per-element dependencies are not provided "
        "(providesPerElementDependencies is false): read the ModelStructure of modelDescription.xml",
        AND fmi3ValueReference valueReference, size_t *nDependencies)
REFUSED(fmi3GetVariableDependencies, "per-element dependencies are not provided "
        "(providesPerElementDependencies is false): read the ModelStructure of modelDescription.xml",
        AND fmi3ValueReference dependent, size_t elementIndicesOfDependent[], fmi3ValueReference independents[],
        size_t elementIndicesOfIndependents[], fmi3DependencyKind dependencyKinds[], size_t nDependencies)
REFUSED(fmi3GetIntervalDecimal, NO_CLOCKS, AND const fmi3ValueReference vr[], size_t nvr, fmi3Float64 intervals[],
        fmi3IntervalQualifier qualifiers[])
REFUSED(fmi3GetIntervalFraction, NO_CLOCKS, AND const fmi3ValueReference vr[], size_t nvr, fmi3UInt64 counters[],
        fmi3UInt64 resolutions[], fmi3IntervalQualifier qualifiers[])
REFUSED(fmi3GetShiftDecimal, NO_CLOCKS, AND const fmi3ValueReference vr[], size_t nvr, fmi3Float64 shifts[])
REFUSED(fmi3GetShiftFraction, NO_CLOCKS, AND const fmi3ValueReference vr[], size_t nvr, fmi3UInt64 counters[],
        fmi3UInt64 resolutions[])
REFUSED(fmi3SetIntervalDecimal, NO_CLOCKS, AND const fmi3ValueReference vr[], size_t nvr, const fmi3Float64 intervals[])
REFUSED(fmi3SetIntervalFraction, NO_CLOCKS, AND const fmi3ValueReference vr[], size_t nvr, const fmi3UInt64 counters[],
        const fmi3UInt64 resolutions[])
REFUSED(fmi3SetShiftDecimal, NO_CLOCKS, AND const fmi3ValueReference vr[], size_t nvr, const fmi3Float64 shifts[])
REFUSED(fmi3SetShiftFraction, NO_CLOCKS, AND const fmi3ValueReference vr[], size_t nvr, const fmi3UInt64 counters[],
        const fmi3UInt64 resolutions[])
REFUSED(fmi3ActivateModelPartition, "this FMU supports co-simulation only, not Scheduled Execution",
        AND fmi3ValueReference clockReference, fmi3Float64 activationTime)
REFUSED(fmi3EnterContinuousTimeMode, NO_ME, ALONE)
REFUSED(fmi3CompletedIntegratorStep, NO_ME, AND fmi3Boolean noSetFMUStatePriorToCurrentPoint, fmi3Boolean *enterEventMode,
        fmi3Boolean *terminateSimulation)
REFUSED(fmi3SetTime, NO_ME, AND fmi3Float64 time)
REFUSED(fmi3SetContinuousStates, NO_ME, AND const fmi3Float64 continuousStates[], size_t nContinuousStates)
REFUSED(fmi3GetContinuousStateDerivatives, NO_ME, AND fmi3Float64 derivatives[], size_t nContinuousStates)
REFUSED(fmi3GetEventIndicators, NO_ME, AND fmi3Float64 eventIndicators[], size_t nEventIndicators)
REFUSED(fmi3GetContinuousStates, NO_ME, AND fmi3Float64 continuousStates[], size_t nContinuousStates)
REFUSED(fmi3GetNominalsOfContinuousStates, NO_ME, AND fmi3Float64 nominals[], size_t nContinuousStates)
REFUSED(fmi3GetNumberOfEventIndicators, NO_ME, AND size_t *nEventIndicators)
REFUSED(fmi3GetNumberOfContinuousStates, NO_ME, AND size_t *nContinuousStates)
