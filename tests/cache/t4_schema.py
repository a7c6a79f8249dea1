"""The required fields and types of Kernel Tuner's T4 results format, checked without a JSON-Schema
engine (Python standard library only).

The rules are those of the T4 results schema, "Open Autotuning Results Schema", version 1.0.0:
  results-schema.json in https://github.com/odgaard/TuningSchema (branch T4), shipped by Kernel Tuner
  as kernel_tuner/schema/T4/1.0.0/results-schema.json (https://github.com/KernelTuner/kernel_tuner);
and, for the optional "metadata" object, schemas/T4.json of the autotuning methodology
  (https://github.com/AutoTuningAssociation/autotuning_methodology).
Only what those schemas state is checked: required keys, JSON types, the invalidity enum, the
schema_version pattern, the metadata.timeunit and compute_api enums.

validate(doc) returns a list of problems ("results[3]: no 'invalidity'"); empty when doc is T4.
"""
import re

VERSION = re.compile(r"^[0-9]{1,}\.[0-9]{1,}\.[0-9]{1,}$")
INVALIDITY = {"timeout", "compile", "runtime", "correctness", "constraints", "correct"}
TIMEUNITS = {"nanoseconds", "microseconds", "milliseconds", "seconds"}
COMPUTE_APIS = {"OpenCL", "CUDA", "Vulkan"}

NUMBER = (int, float)


def _is(value, types):
    # JSON's number excludes true/false, which Python's bool would pass as int
    return isinstance(value, types) and not isinstance(value, bool)


# name: (types, required) of a result, of its "times", of a measurement, of the metadata
RESULT = {
    "timestamp": (str, False),
    "configuration": (dict, True),
    "objectives": (list, False),
    "times": (dict, True),
    "invalidity": (str, True),
    "correctness": (NUMBER, True),
    "measurements": (list, False),
}
TIMES = {
    "compilation_time": (NUMBER, False),
    "runtimes": (list, False),
    "framework": (NUMBER, False),
    "search_algorithm": (NUMBER, False),
    "validation": (NUMBER, False),
}
MEASUREMENT = {"name": (str, False), "value": (NUMBER + (str, list), False), "unit": (str, False)}
METADATA = {
    "compute_api": (str, False),
    "platform": (str, False),
    "device": (str, False),
    "autotuner": (str, False),
    "autotuner_version": (str, False),
    "timestamp": (str, False),
    "timeunit": (str, False),
}


def _fields(obj, rules, where, problems):
    for name, (types, required) in rules.items():
        if name not in obj:
            if required:
                problems.append("%sno '%s'" % (where, name))
        elif not _is(obj[name], types):
            problems.append("%s'%s' has the wrong type (%s)" % (where, name, type(obj[name]).__name__))


def validate(doc):
    problems = []
    if not isinstance(doc, dict):
        return ["the document is not an object"]
    version = doc.get("schema_version")
    if version is not None and not (isinstance(version, str) and VERSION.match(version)):
        problems.append("schema_version %r is not major.minor.patch" % (version,))
    meta = doc.get("metadata")
    if meta is not None:
        if not isinstance(meta, dict):
            problems.append("metadata is not an object")
        else:
            _fields(meta, METADATA, "metadata: ", problems)
            if "timeunit" in meta and meta["timeunit"] not in TIMEUNITS:
                problems.append("metadata.timeunit %r is not one of %s" % (meta["timeunit"], sorted(TIMEUNITS)))
            if "compute_api" in meta and meta["compute_api"] not in COMPUTE_APIS:
                problems.append("metadata.compute_api %r is not one of %s" % (meta["compute_api"], sorted(COMPUTE_APIS)))
    results = doc.get("results")
    if results is not None and not isinstance(results, list):
        problems.append("results is not an array")
        results = []
    for i, res in enumerate(results or []):
        where = "results[%d]: " % i
        if not isinstance(res, dict):
            problems.append(where + "not an object")
            continue
        _fields(res, RESULT, where, problems)
        if isinstance(res.get("invalidity"), str) and res["invalidity"] not in INVALIDITY:
            problems.append(where + "invalidity %r is not one of %s" % (res["invalidity"], sorted(INVALIDITY)))
        if isinstance(res.get("times"), dict):
            _fields(res["times"], TIMES, where + "times: ", problems)
            for j, t in enumerate(res["times"].get("runtimes") or []):
                if not _is(t, NUMBER):
                    problems.append(where + "times.runtimes[%d] is not a number" % j)
        for j, o in enumerate(res.get("objectives") or []):
            if not isinstance(o, str):
                problems.append(where + "objectives[%d] is not a string" % j)
        for j, m in enumerate(res.get("measurements") or []):
            if not isinstance(m, dict):
                problems.append(where + "measurements[%d] is not an object" % j)
            else:
                _fields(m, MEASUREMENT, where + "measurements[%d]: " % j, problems)
    return problems
