"""`python -m ln_viz runs ...`: list, export, import, label and delete stored runs, load the demo runs.

Commands that only read (`list`, `export`) open the store read-only; see `_open_store_to_read`."""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from ln_viz.cli.parser import Parser, UsageError
from ln_viz.config import NORM_POSITIONS
from ln_viz.i18n import LocalizedError
from ln_viz.schema import STATUSES
from ln_viz.text import one_line

MAX_RUN_ID = 2**63 - 1  # SQLite's largest integer: a larger id would overflow before any query


_STORE_HELP = "the run store (default: $LN_VIZ_STORE, else $XDG_DATA_HOME/ln-viz/runs.sqlite)"


def add_runs_commands(sub: Any) -> None:
    """The `runs` subcommands, added to the top-level parser `sub`."""
    runs = sub.add_parser("runs", help="list, export, import, label and delete stored runs")
    rsub = runs.add_subparsers(dest="runs_command", required=True, parser_class=Parser)

    ls = rsub.add_parser("list", help="the stored runs, newest first")
    ls.add_argument("--json", action="store_true", help="print a JSON list of run objects")
    ls.add_argument("--status", action="append", choices=STATUSES, help="only runs with this status (repeatable)")
    ls.add_argument(
        "--norm-position", action="append", choices=NORM_POSITIONS, help="only this norm position (repeatable)"
    )
    ls.add_argument("--sort", default="-created", help="created, id, final_loss, depth... ('-' = descending)")
    ls.set_defaults(func=cmd_runs_list)

    ex = rsub.add_parser(
        "export",
        help="write a run as tables (csv, parquet), chart files (png, svg, html: a folder), one run file, or an "
        "offline lecture pack (pack: one HTML file of the run, or of it and --vs RUN_ID, in the folder)",
    )
    ex.add_argument("run_id", type=int, metavar="RUN_ID")
    ex.add_argument(
        "--format",
        required=True,
        choices=("csv", "parquet", "run", "png", "svg", "html", "pack", "mp4", "gif"),
        dest="fmt",
    )
    ex.add_argument(
        "--out", required=True, help="a folder (csv, parquet, png, svg, html) or a file; .gz compresses a run file"
    )
    ex.add_argument(
        "--lang", default="en", choices=("en", "ko"), help="png, svg, html, pack, mp4, gif: the charts' language"
    )
    ex.add_argument("--vs", type=int, metavar="RUN_ID", help="pack, mp4, gif: a second run, compared in the same file")
    ex.add_argument("--size", help="mp4, gif: WIDTHxHEIGHT in pixels (default 1920x1080; a gif 960x540)")
    ex.add_argument("--seconds", help="mp4, gif: how long the animation lasts (default 15; 1 to 600)")
    ex.add_argument("--probe-stride", type=int, default=1, help="run file: keep every Nth probe step")
    ex.set_defaults(func=cmd_runs_export)

    im = rsub.add_parser("import", help="add a run file to the store (refused unless valid)")
    im.add_argument("file", metavar="FILE")
    im.add_argument("--json", action="store_true", help='print {"run_id": N, "added": true|false}')
    im.set_defaults(func=cmd_runs_import)

    de = rsub.add_parser("delete", help="delete a run and its data")
    de.add_argument("run_id", type=int, metavar="RUN_ID")
    de.set_defaults(func=cmd_runs_delete)

    la = rsub.add_parser("label", help='label a run ("" clears the label)')
    la.add_argument("run_id", type=int, metavar="RUN_ID")
    la.add_argument("text", metavar="TEXT")
    la.set_defaults(func=cmd_runs_label)

    dm = rsub.add_parser("demo", help="import the bundled demo runs (each once)")
    dm.set_defaults(func=cmd_runs_demo)

    for p in (ls, ex, im, de, la, dm):
        p.add_argument("--store", help=_STORE_HELP)


def _open_store(args: argparse.Namespace, create: bool = False) -> Any:
    """The store named by --store (or the environment, or the default); only writes create one."""
    from ln_viz.store import Store, StoreError, resolve_store_path

    path = resolve_store_path(args.store)
    if not create and not path.exists():
        raise StoreError("err.store_missing", path=str(path))
    return Store(path)


def _open_store_to_read(args: argparse.Namespace) -> Any:
    """The store for a command that only reads (`runs list`, `runs export`): opened read-only, so a
    file that is not an ln-viz store is refused untouched and a read-only folder is fine. An ln-viz
    store is opened for writing only when reading it needs its migration (an older schema) or it has
    runs whose writer died (marked `interrupted`, as every opener for writing does)."""
    from ln_viz.store import Store, StoreError, resolve_store_path

    path = resolve_store_path(args.store)
    try:
        store = Store(path, readonly=True)
    except StoreError as e:
        if e.key != "err.store_old_readonly":
            raise
        return Store(path)
    if store.dead_writers() and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK):
        store.close()  # runs whose writer died: marking them `interrupted` is ours to do, as any opener does
        return Store(path)
    return store


def cmd_runs_list(args: argparse.Namespace) -> int:
    """`runs list`: the stored runs, newest first (or --json)."""
    from ln_viz.store import RunFilter, resolve_store_path

    path = resolve_store_path(args.store)
    if not path.exists():  # no store yet is no runs, not an error
        print("[]" if args.json else f"no runs in {one_line(str(path))}")
        return 0
    filters = RunFilter(
        status=tuple(args.status) if args.status else None,
        norm_position=tuple(args.norm_position) if args.norm_position else None,
    )
    with _open_store_to_read(args) as store:
        runs = store.list_runs(filters, sort=args.sort)
    if args.json:
        print(json.dumps([r.to_dict() for r in runs], allow_nan=False))
        return 0
    if not runs:
        print(f"no runs in {one_line(str(path))}")
        return 0
    print(
        f"{'id':>4}  {'created':16}  {'status':11}  {'norm':8}  {'depth':>5}  {'steps':>11}  {'final loss':>10}  "
        f"{'seed group':20}  label"
    )
    for r in runs:
        damage = r.damage()
        if damage is not None:  # one bad row is said, not a traceback that hides the others
            print(f"{r.id!s:>4}  {damage}")
            continue
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created))
        loss = (
            "-" if r.final_loss is None else f"{r.final_loss:.3f}" if abs(r.final_loss) < 1e6 else f"{r.final_loss:.3e}"
        )
        steps = f"{r.steps_done}/{r.steps}"
        group = one_line(r.seed_group or "-")[:20]
        print(
            f"{r.id:>4}  {created:16}  {r.status:11}  {r.norm_position:8}  {r.depth:>5}  {steps:>11}  "
            f"{loss:>10}  {group:20}  {one_line(r.label or '')}"  # a label's newline or escape stays visible text
        )
    return 0


def cmd_runs_export(args: argparse.Namespace) -> int:
    """`runs export`: a run as tables, chart files or one run file; prints the paths written."""
    from ln_viz.store.transfer import export_run

    if args.probe_stride < 1:
        raise UsageError(f"--probe-stride must be at least 1, got {args.probe_stride}")
    _check_run_id(args.run_id)
    if args.vs is not None and args.fmt not in ("pack", "mp4", "gif"):
        raise UsageError("--vs is for --format pack, mp4 and gif only")
    with _open_store_to_read(args) as store:
        if args.fmt == "pack":
            paths = [_export_pack(store, args)]
        elif args.fmt in ("mp4", "gif"):  # the lecture view's animation (ln_viz/video.py), of a run or a pair
            from pathlib import Path

            from ln_viz.video import DEFAULT_SECONDS, export_video, parse_seconds, parse_size

            size = parse_size(args.size) if args.size else None
            seconds = parse_seconds(args.seconds) if args.seconds is not None else DEFAULT_SECONDS
            datas, labels, ids = _runs_of(store, args)
            out = Path(args.out)
            if len(ids) == 2 and (out.is_dir() or not out.suffix):
                out = out / f"ln-viz-{ids[0]}-vs-{ids[1]}.{args.fmt}"
            paths = [export_video(datas, out, args.fmt, size=size, lang=args.lang, labels=labels, seconds=seconds)]
        elif args.fmt in ("png", "svg", "html"):  # one file per chart of the run (ln_viz/export.py: charts_for)
            from ln_viz.export import export_charts

            paths = export_charts(store.open_run(args.run_id), args.out, formats=(args.fmt,), lang=args.lang)
        else:
            paths = export_run(store, args.run_id, args.fmt, args.out, probe_stride=args.probe_stride)
    for path in paths:
        print(path)
    return 0


def _runs_of(store: Any, args: argparse.Namespace) -> tuple[list, list[str] | None, list[int]]:
    """The run and, with --vs, the one it is compared with: their data, their labels (None: by their norm
    positions; "run N" when both have the same one) and their ids."""
    ids = [args.run_id] if args.vs is None else [args.run_id, args.vs]
    for run_id in ids:
        _check_run_id(run_id)
    datas = [store.open_run(run_id) for run_id in ids]
    norms = [d.info.config.norm_position for d in datas]
    labels = [f"run {i}" for i in ids] if len(ids) == 2 and norms[0] == norms[1] else None  # else their norms
    return datas, labels, ids


def _export_pack(store: Any, args: argparse.Namespace) -> Any:
    """`--format pack`: ln-viz-pack-<id>[-vs-<id>].<lang>.html in the --out folder (ln_viz/pack.py)."""
    from ln_viz.export import out_folder
    from ln_viz.pack import write_pack

    datas, labels, ids = _runs_of(store, args)
    out = out_folder(args.out)
    name = "ln-viz-pack-" + "-vs-".join(map(str, ids)) + f".{args.lang}.html"
    return write_pack(datas, out / name, args.lang, labels)


def cmd_runs_import(args: argparse.Namespace) -> int:
    """`runs import`: add a run file to the store, once."""
    from ln_viz.runfile import read_run_file
    from ln_viz.store.transfer import add_loaded_run

    loaded = read_run_file(args.file)  # refuse a bad file before creating a store for it
    with _open_store(args, create=True) as store:
        run_id, added = add_loaded_run(store, loaded)
    if args.json:
        print(json.dumps({"run_id": run_id, "added": added}))
    elif added:  # a path's non-UTF-8 bytes as visible escapes: stdout cannot encode them
        print(f"imported run {run_id} from {one_line(args.file)}")
    else:
        print(f"{one_line(args.file)} is already in the store as run {run_id}")
    return 0


def cmd_runs_delete(args: argparse.Namespace) -> int:
    """`runs delete`: a run and its data."""
    _check_run_id(args.run_id)
    with _open_store(args) as store:
        store.delete(args.run_id)
    print(f"deleted run {args.run_id}")
    return 0


def cmd_runs_label(args: argparse.Namespace) -> int:
    """`runs label`: set or clear a run's label."""
    _check_run_id(args.run_id)
    with _open_store(args) as store:
        store.label(args.run_id, args.text)
    print(f"labelled run {args.run_id}")
    return 0


def _check_run_id(run_id: int) -> None:
    """Refuse an id no run can have before SQLite sees it (it raises OverflowError from 2**63 on)."""
    if not 1 <= run_id <= MAX_RUN_ID:
        raise LocalizedError("err.run_id_range", value=str(run_id), hi=f"{MAX_RUN_ID:,}")


def cmd_runs_demo(args: argparse.Namespace) -> int:
    """`runs demo`: import the bundled demo runs (each once)."""
    from ln_viz.store.transfer import load_demo_runs

    with _open_store(args, create=True) as store:
        added = load_demo_runs(store)
    print(f"imported {len(added)} demo runs" + (f": {', '.join(map(str, added))}" if added else ""))
    return 0
