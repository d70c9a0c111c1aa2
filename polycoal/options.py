"""The choices of `transform` as a command line states them (and the build plugin's
POLYCOAL_OPTIONS, and project mode's): argparse options and the one TransformOptions
value they make. Below the command line, the build plugin and project mode, which all
read them."""

from __future__ import annotations

import argparse
import os

from polycoal.diagnostics import InputError
from polycoal.frontend.preprocess import DEFAULT_STD


def add_preprocessor_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="add DIR to the include path (as the compiler driver does)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="define a macro")
    p.add_argument("-U", dest="undefines", action="append", default=[], metavar="NAME",
                   help="undefine a macro")
    p.add_argument("-include", "--include", "--pre-include", dest="forced_includes",
                   action="append", default=[], metavar="FILE",
                   help="read FILE before the source's first line (the compiler's -include, "
                   "nvcc's --pre-include): give the build's")
    p.add_argument("-imacros", dest="imacros", action="append", default=[], metavar="FILE",
                   help="read the macros of FILE before the source (the compiler's -imacros)")


def add_transform_options(p: argparse.ArgumentParser) -> None:
    """The choices of `transform`, which `validate` applies before it runs both kernels."""
    p.add_argument("--kernel", help="only this kernel")
    p.add_argument("--block", type=block_shape, help="block shape x,y[,z] for the new geometry "
                   "(default 256 / 32,8 / 32,4,2 by the number of axes)")
    p.add_argument("--no-polyhedral", action="store_true",
                   help="do not restructure affine kernels")
    p.add_argument("--collapse-redundant-threads", action="store_true",
                   help="for a kernel whose only races are between copies of each thread "
                   "along an axis it never reads, run one copy (by default only where "
                   "each copy reads of the kernel's output only what it wrote itself: then "
                   "the copies leave what one copy leaves, in lockstep or one after another)")
    p.add_argument("--keep-redundant-threads", action="store_true",
                   help="keep such a kernel as written even where one copy is proven to "
                   "leave what its copies leave")
    p.add_argument("--reduction", choices=("auto", "warp", "block", "tiles", "split", "none"),
                   default="auto", help="how to restructure reductions: auto (one warp per "
                   "row for rows, split for starved columns), warp, split (columns over 2-D "
                   "blocks and atomicAdd), block (a block per 32 columns, no atomics), tiles "
                   "(the core paper's partial sums), or none")
    p.add_argument("--no-promotion", action="store_true",
                   help="keep accumulators in global memory (no register promotion)")
    p.add_argument("--assume-no-alias", action="store_true",
                   help="take distinct pointer arguments to be distinct arrays even without "
                   "evidence (restrict, distinct cudaMalloc allocations)")
    p.add_argument("--no-runtime-checks", action="store_true",
                   help="leave alone a kernel that is race-free only for some values of its "
                   "arguments (by default it is transformed, and each launch checks the "
                   "condition on the host and runs the original where it fails)")
    p.add_argument("--no-model", action="store_true",
                   help="take the first form the passes propose, whatever the performance "
                   "model predicts of it (the model only reports): to measure what the "
                   "model keeps (polycoal bench)")
    p.add_argument("--no-ptxas", action="store_true",
                   help="estimate each form's occupancy (by default, where nvcc is present "
                   "and the warps a multiprocessor holds could change the model's choice, "
                   "the registers and shared memory ptxas allocates the kernel and each "
                   "form decide it)")
    p.add_argument("--no-staging", action="store_true",
                   help="do not stage reads through shared-memory tiles (kernels whose "
                   "references coalesce along two different dims, such as transposes)")
    p.add_argument("--no-window", action="store_true",
                   help="do not run stencils several rows a thread with their windows' "
                   "reads in registers")
    p.add_argument("--window-always", action="store_true",
                   help="propose the register window wherever it applies, kernels that "
                   "share no element and launches of unknown sizes included (with "
                   "--no-model: taken; the random tester's `window` set)")
    p.add_argument("--no-sweep", action="store_true",
                   help="do not stage a thread's loop along its row through shared memory "
                   "(kernels whose trips depend on each other: ADI's sweeps, a prefix sum "
                   "per row)")
    p.add_argument("--sweep-rows", type=int, choices=(1, 2, 4, 8, 16, 32), default=None,
                   help="rows of a staged sweep a warp runs (by default from the rows' "
                   "count: enough warps to keep each multiprocessor's schedulers busy)")
    p.add_argument("--keep-waits", action="store_true",
                   help="keep every wait for the device in host loops of launches (by "
                   "default the waits between launches into the default stream are "
                   "dropped where nothing else in the loop touches the device or memory "
                   "it reaches, and one wait is made after the loop)")
    p.add_argument("--keep-trips", action="store_true",
                   help="keep host loops of one launch as loops of launches (by default a "
                   "loop whose trips touch the same elements only from the same threads "
                   "runs as one launch, each thread running the trips in order)")
    p.add_argument("--reorganise", choices=("auto", "none"), default="auto",
                   help="irregular references (gathers x[P[i]], loops over the runs of a "
                   "CSR row pointer) read from reorganised copies built on the GPU before "
                   "launches that reuse them: auto (where predicted and measured faster), "
                   "none")
    p.add_argument("--no-placement", action="store_true",
                   help="leave every array in global memory (by default an array a kernel "
                   "only reads is placed read-only, in constant memory or in shared-memory "
                   "tiles where the memory specification's costs and the performance model "
                   "both predict a gain)")
    p.add_argument("--layout", choices=("auto", "soa", "grouped", "none"), default="auto",
                   help="data layout of device arrays of structs read by field (p[i].x): "
                   "auto (chosen by sectors and requests over all kernels), soa (a struct "
                   "of arrays), grouped (fields read together in aligned vectors), none "
                   "(keep every layout)")
    p.add_argument("--compile-check", choices=("clang", "nvcc", "none"), default="clang",
                   help="the compiler that must accept the output wherever it accepts the "
                   "input before it is written: clang (libclang in CUDA mode, a parse; "
                   "none where libclang is not installed), nvcc (nvcc -arch=sm_90 "
                   "-fdevice-syntax-only -c), or none; a kernel whose rewrite does not "
                   "compile is left as written, with an error (output-rejected)")
    p.add_argument("--sizes", action="append", default=[], metavar="[KERNEL:]tile=T,...",
                   help="the shape of tiled products: tile=T (outputs per block along "
                   "each dim), tall=R (R rows of T columns in the warp layout instead, each "
                   "warp 4R/B x 8T/B outputs; tall=T: square tiles in it), threads=B (B x B threads per block, default 16), chunk=C "
                   "(reduction steps staged at a time, default 16), blocks=N (blocks per "
                   "multiprocessor the registers must allow, default 0: the compiler's "
                   "choice); for KERNEL only, or "
                   "for every kernel; repeat for several kernels (--dump-sizes prints "
                   "polycoal's choice in this form)")
    p.add_argument("--tile", type=int, default=0, metavar="T",
                   help="tiles of T x T outputs for every tiled product (as --sizes "
                   "tile=T; a --sizes value wins)")
    p.add_argument("--product-micro", type=int, choices=(4, 8, 16), default=0,
                   help="accumulators per thread along each dim of a tiled product: "
                   "4 is --sizes tile=64,chunk=16, 8 is --sizes tile=128,chunk=8, 16 is "
                   "--sizes tile=128,tall=256,chunk=8,blocks=1 (16 x 8)")
    p.add_argument("--empirical", action="store_true",
                   help="for kernels outside the affine model, choose the thread-axis "
                   "permutation by tracing each candidate on the CPU (compiles and runs "
                   "the kernel; small sizes: use -D, --arg) instead of by the static ILP; "
                   "off by default")
    p.add_argument("--no-empirical", action="store_true",
                   help="accepted for compatibility, changes nothing: the search runs only "
                   "with --empirical")


def _environment_shape(name: str, environ) -> tuple[int, ...] | None:
    """A column form's shape from the environment (comma-separated positive integers)."""
    value = environ.get(name, "").strip()
    if not value:
        return None
    try:
        shape = tuple(int(v) for v in value.split(","))
    except ValueError:
        shape = ()
    if not shape or min(shape) < 1:
        raise InputError(f"{name}={value}: expected positive integers separated by commas")
    return shape


def parse_sizes(text: str) -> tuple[str, int, int, int, int, int]:
    """One --sizes value, `[KERNEL:]tile=T[,tall=R][,threads=B][,chunk=C][,blocks=N]`,
    as (kernel or "", tile, threads, chunk, blocks, tall); InputError when it is not
    that or cannot run."""
    from polycoal.optimize.products import TileSizes
    kernel, _, fields = text.rpartition(":")
    given = TileSizes()
    values = {"tile": given.tile, "threads": given.threads, "chunk": given.chunk,
              "blocks": given.blocks, "tall": given.tall}
    for field in fields.split(","):
        name, _, value = field.partition("=")
        if name.strip() not in values or not value.strip().isdigit():
            raise InputError(f"--sizes {text}: expected [KERNEL:]tile=T[,tall=R]"
                             "[,threads=B][,chunk=C][,blocks=N] with integers")
        values[name.strip()] = int(value)
    sizes = TileSizes(values["tile"], values["threads"], values["chunk"], values["blocks"],
                      values["tall"])
    if sizes.problem():
        raise InputError(f"--sizes {text}: {sizes.problem()}")
    return kernel.strip(), sizes.tile, sizes.threads, sizes.chunk, sizes.blocks, sizes.tall


def _sizes(args) -> tuple[tuple[str, int, int, int, int], ...]:
    micro = {4: ["tile=64,chunk=16"], 8: ["tile=128,chunk=8"],
             16: ["tile=128,tall=256,chunk=8,blocks=1"]}.get(
        getattr(args, "product_micro", 0), [])
    tile = [f"tile={args.tile}"] if getattr(args, "tile", 0) else []
    return tuple(parse_sizes(t) for t in micro + tile + list(getattr(args, "sizes", [])))


def transform_options(args, environ=None):
    """The one options object of a transform, from the command line and the environment
    (the column forms' tuning shapes, POLYCOAL_SPLIT=rows,groups[,columns] and
    POLYCOAL_COLUMN_GROUPS=G), read here and nowhere else."""
    from polycoal.transform import TransformOptions
    environ = os.environ if environ is None else environ
    split = _environment_shape("POLYCOAL_SPLIT", environ)
    if split is not None and len(split) not in (2, 3):
        raise InputError("POLYCOAL_SPLIT: expected rows,groups[,columns]")
    groups = _environment_shape("POLYCOAL_COLUMN_GROUPS", environ)
    if groups is not None and len(groups) != 1:
        raise InputError("POLYCOAL_COLUMN_GROUPS: expected one number")
    return TransformOptions(kernel=args.kernel, block=args.block,
                            split=split, column_groups=groups[0] if groups else None,
                            polyhedral=not args.no_polyhedral, promote=not args.no_promotion,
                            reduction=args.reduction,
                            collapse_redundant=args.collapse_redundant_threads,
                            collapse_proven=not args.keep_redundant_threads,
                            assume_no_alias=args.assume_no_alias,
                            runtime_checks=not args.no_runtime_checks,
                            staging=not args.no_staging, window=not args.no_window,
                            window_always=getattr(args, "window_always", False),
                            sweep=not getattr(args, "no_sweep", False),
                            sweep_rows=getattr(args, "sweep_rows", None),
                            launch_waits=not getattr(args, "keep_waits", False),
                            launch_trips=not getattr(args, "keep_trips", False),
                            sizes=_sizes(args),
                            model=not getattr(args, "no_model", False),
                            occupancy="estimate" if getattr(args, "no_ptxas", False)
                            else "ptxas",
                            layout=args.layout, reorganise=args.reorganise,
                            compile_check=args.compile_check,
                            placement="none" if getattr(args, "no_placement", False) or
                            getattr(args, "placement", False) else "auto",
                            empirical=args.empirical,
                            arguments=tuple(sorted(int_arguments(args).items())),
                            preprocessor=preprocessor_options(args))


class _OptionsParser(argparse.ArgumentParser):
    def error(self, message):
        raise InputError(f"POLYCOAL_OPTIONS: {message}")


def transform_options_from(argv: list[str], preprocessor, environ=None):
    """TransformOptions from `transform`'s options in `argv` (the build plugin's
    POLYCOAL_OPTIONS) and the build's preprocessor options. As `transform`, a build does
    not trace kernels (compiles and runs them on the CPU, seconds each) unless
    --empirical asks for it."""
    from dataclasses import replace
    parser = _OptionsParser(prog="POLYCOAL_OPTIONS", add_help=False)
    add_transform_options(parser)
    parser.set_defaults(include_dirs=[], defines=[], undefines=[], forced_includes=[],
                        imacros=[])
    return replace(transform_options(parser.parse_args(argv), environ),
                   preprocessor=preprocessor)


def add_arg_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                   help="value of an int kernel argument, or of a variable of the "
                   "launching function (a run-time size: `--arg n=1000` where main "
                   "computes the grid from n), for the kernels run")


def int_arguments(args) -> dict[str, int]:
    arguments = {}
    for item in getattr(args, "arg", []):
        name, _, value = item.partition("=")
        try:
            arguments[name.strip()] = int(value, 0)
        except ValueError:
            raise InputError(f"--arg {item}: expected NAME=INTEGER") from None
    return arguments


def positive(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive integer")
    return value


def block_shape(text: str) -> tuple[int, int, int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not x,y[,z]") from None
    values += [1] * (3 - len(values))
    x, y, z = values[:3]
    if len(values) > 3 or min(values) < 1 or x * y * z > 1024 or z > 64:
        raise argparse.ArgumentTypeError(
            f"block {text}: at most 1024 threads, z <= 64, all positive")
    return x, y, z


def preprocessor_options(args):
    from polycoal.frontend.preprocess import PreprocessorOptions
    return PreprocessorOptions(tuple(args.include_dirs), tuple(args.defines),
                               tuple(args.undefines), getattr(args, "std", DEFAULT_STD),
                               tuple(getattr(args, "forced_includes", ())),
                               tuple(getattr(args, "imacros", ())))
