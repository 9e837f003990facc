"""The sweep's table: one row per cell, ``sweep.parquet`` and ``sweep.csv``, always valid on disk.

A pandas DataFrame: what an analyst reaches for next (``groupby``, plotting,
statistics) works on it directly; pyarrow is only its Parquet engine. Columns:
`LEAD` (cell, key, scenario, transport), the grid keys (their dotted names),
`seed`, `STATUS`, then the metrics of `cell.flatten` in the order they first
appear. Both files are written to a temporary name and renamed, so a reader (or
a sweep stopped at any moment) sees the previous complete table or the new one,
never half of one.
"""
from __future__ import annotations

import os
import pathlib

LEAD = ["cell", "key", "scenario", "transport"]
STATUS = ["status", "error", "cell_s", "worker", "code_version", "results"]
PARQUET = "sweep.parquet"
CSV = "sweep.csv"


def frame(rows: list[dict], grid_keys: list[str]):
    """The DataFrame of `rows`, columns in the table's order, sorted by cell."""
    import pandas as pd

    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=LEAD + grid_keys + ["seed"] + STATUS)
    head = LEAD + grid_keys + ["seed"] + STATUS
    for c in head:
        if c not in df.columns:
            df[c] = None
    rest = [c for c in df.columns if c not in head]
    return df[head + rest].sort_values("cell", kind="stable").reset_index(drop=True)


def write(df, out: pathlib.Path) -> None:
    """Both files, atomically."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{PARQUET}.tmp"
    _arrow_safe(df).to_parquet(tmp, index=False)
    os.replace(tmp, out / PARQUET)
    tmp = out / f".{CSV}.tmp"
    rounded(df).to_csv(tmp, index=False)
    os.replace(tmp, out / CSV)


def rounded(df):
    """A copy of `df` with each real number rounded to its column's precision (`mrc.emulator.precision`): what the
    CSV files hold (Parquet keeps the exact values)."""
    from mrc.emulator import precision

    df = df.copy()
    for c in df.columns:
        if df[c].dtype.kind == "f":
            df[c] = precision.rounded(c, df[c].to_numpy())
        elif df[c].dtype == object:
            df[c] = [precision.value(c, v) for v in df[c]]
    return df


def write_stats(st, out: pathlib.Path) -> None:
    """``stats.csv``: the statistics (`stats.summarize`), each row's median and interval rounded to the precision
    of its metric."""
    from mrc.emulator import precision

    st = st.copy()
    for c in ("median", "ci_low", "ci_high"):
        if c in st:
            st[c] = [precision.value(m, float(v)) for m, v in zip(st["metric"], st[c])]
    st.to_csv(pathlib.Path(out) / "stats.csv", index=False)


def _arrow_safe(df):
    """Columns that mix types (a grid of strings and numbers, or a value only some cells have) as text."""
    df = df.copy()
    for c in df.columns:
        if df[c].dtype == object:
            kinds = {type(v) for v in df[c] if v is not None and v == v}
            if len(kinds) > 1 and not kinds <= {int, float}:
                df[c] = df[c].map(lambda v: None if v is None or v != v else str(v))
    return df


def read(out: pathlib.Path):
    """The table in `out` (Parquet, else CSV), or None."""
    import pandas as pd

    out = pathlib.Path(out)
    if (out / PARQUET).is_file():
        return pd.read_parquet(out / PARQUET)
    if (out / CSV).is_file():
        return pd.read_csv(out / CSV)
    return None


def records(df) -> list[dict]:
    """The table's rows as dicts, nulls as None (to merge with new rows)."""
    import pandas as pd

    return [{k: (None if not isinstance(v, (list, tuple)) and pd.isna(v) else v) for k, v in r.items()}
            for r in df.to_dict("records")]
