"""`polycoal bench`: the performance model's prediction beside the measurement, for
every kernel of a program (needs a GPU and pycuda).

The program is transformed twice: as `transform` does (the model chooses among the
forms the passes propose and the kernel as written), and with the model only reporting
(`--no-model`: the first form proposed is taken). Every form of the second run is
validated and timed against the original on the device (validate/device.py: fresh
random inputs, every array compared, the median of `repeats` event-timed launches
after a warm-up), so a form the model keeps is measured too: the model was right where
it took a form measured faster, or kept one measured no faster.
"""

from __future__ import annotations

from dataclasses import replace

from polycoal.analysis.roofline import MARGIN
from polycoal.decisions import TransformOptions
from polycoal.diagnostics import Diagnostic
from polycoal.frontend.program import Program
from polycoal.transform import transform_program
from polycoal.validate.device import SLOWER_BELOW, validate_device


def bench(program: Program, options: TransformOptions, arguments: dict[str, int],
          repeats: int = 10) -> list[dict]:
    """One row per kernel: what the model chose, the form the passes proposed, the
    model's times (microseconds) and the measured ones (milliseconds)."""
    options = replace(options, price_at=tuple(sorted(arguments.items())))
    chosen = transform_program(program, options)
    unmodelled = replace(options, model=False)
    proposed = transform_program(program, unmodelled)
    verdicts = {v.kernel: v for v in validate_device(program, proposed, unmodelled,
                                                     arguments, repeats)}
    # the same kernels in the same order, though a template's copy is named apart where
    # it changes (minkowski<512, 1024, 2048> runs as minkowski__pc_512_1024_2048)
    if len(proposed.decisions) == len(chosen.decisions):
        pairs = list(zip(chosen.decisions, proposed.decisions))
    else:
        forms = {d.kernel: d for d in proposed.decisions}
        pairs = [(d, forms.get(d.kernel, d)) for d in chosen.decisions]
    rows = []
    for d, p in pairs:
        row = {"kernel": d.kernel, "chosen": d.action, "code": d.code,
               "proposed": p.action, "predicted": None, "predicted_speedup": None,
               "measured": None, "agrees": None}
        choice = d.predicted or p.predicted
        if choice is not None:
            row["predicted"] = choice.as_json()
            priced = dict(choice.candidates).get(p.action)
            if priced is not None:
                row["predicted_speedup"] = choice.original.time_us / priced.time_us
        v = verdicts.get(p.kernel)
        if v is not None and v.speedup:
            row["measured"] = {"ok": v.ok, "original_ms": v.original_ms,
                               "form_ms": v.transformed_ms, "speedup": v.speedup}
            # taken and not measured slower, or kept and not measured a real gain
            row["agrees"] = v.speedup >= SLOWER_BELOW if d.action != "unchanged" else \
                v.speedup < MARGIN
        rows.append(row)
    return rows


# a form measured less than this much faster than the kernel as written is no gain
# beside the timing noise (validate/device.py: about 2% between repeats; 5% counted)
MEASURED_GAIN = 1.05


def require_device(command: str) -> None:
    """InputError (exit 2) where pycuda or a GPU is missing."""
    from polycoal.diagnostics import InputError
    from polycoal.validate.device import load_pycuda
    try:
        load_pycuda()
    except InputError:
        raise InputError(f"{command} runs kernels on the GPU: it needs pycuda "
                         "(pip install 'polycoal[device]') and a GPU") from None


def measurement_notes(program: Program, verdicts) -> list[Diagnostic]:
    """A note per kernel measured (or failing on the device): its times and speedup."""
    out = []
    for v in verdicts:
        if v.speedup is None and v.ok:
            continue
        kernel = program.kernel(v.kernel)
        out.append(Diagnostic(
            "note", "measured", f"kernel '{v.kernel}' measured: " + (
                f"{v.original_ms:.4g} ms -> {v.transformed_ms:.4g} ms (x{v.speedup:.2f})"
                if v.speedup else v.message),
            kernel.location if kernel else None, v.kernel))
    return out


def measured_transform(program: Program, options: TransformOptions,
                       arguments: dict[str, int], repeats: int = 10):
    """`transform --measure`: the transform, each changed kernel validated and timed
    beside the original on the device at the program's sizes (`arguments`), and the
    transform again with every kernel that failed or was not measured MEASURED_GAIN
    faster kept as written (code measured-slower). Returns the result and the
    verdicts of the first run."""
    require_device("transform --measure")
    result = transform_program(program, options)
    verdicts = validate_device(program, result, options, arguments, repeats)
    keep = []
    for v in verdicts:
        if v.speedup is None and v.ok:
            continue                                  # unchanged, or not timed
        if not v.ok:
            keep.append((v.kernel, f"measured on the device: {v.message}; kept as written"))
        elif v.speedup < MEASURED_GAIN:
            keep.append((v.kernel, f"measured on the device {v.speedup:.2f}x as fast as "
                         f"written ({v.original_ms:.4g} ms -> {v.transformed_ms:.4g} ms): "
                         "kept as written"))
    if keep:
        result = transform_program(program, replace(options, keep=tuple(keep)))
    return result, verdicts


def table(path: str, rows: list[dict]) -> str:
    """The rows as text: one line a kernel."""
    out = [f"polycoal bench {path}",
           f"  {'kernel':26s} {'chosen':12s} {'form measured':14s} {'predicted':>10s} "
           f"{'measured':>9s}  {'original ms':>11s} {'form ms':>9s}  agrees"]
    for r in rows:
        m = r["measured"]
        p = r["predicted_speedup"]
        predicted = f"{p:.2f}x" if p else "-"
        measured, original, form = (f"{m['speedup']:.2f}x", f"{m['original_ms']:.4f}",
                                    f"{m['form_ms']:.4f}") if m else ("-", "-", "-")
        agrees = "-" if r["agrees"] is None else "yes" if r["agrees"] else "NO"
        out.append(f"  {r['kernel'][:26]:26s} {r['chosen']:12s} {r['proposed']:14s} "
                   f"{predicted:>10s} {measured:>9s}  {original:>11s} {form:>9s}  {agrees}")
    return "\n".join(out) + "\n"

