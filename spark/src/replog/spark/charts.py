"""PNG charts for people: load per broker, bytes per broker, failover timelines.

Inputs are small lists of dicts collected by the jobs (one per broker or per
failover), never DataFrames. matplotlib runs headless (Agg). Up to
``BARS_MAX`` brokers are drawn as bars by broker id; above that, bars would be
thinner than a pixel, so brokers are drawn sorted by load as a line (the shape
of the distribution is what one reads there) with the mean for reference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

BARS_MAX = 60
DPI = 110


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def broker_load(brokers: Sequence[Mapping], path: Path, title: str = "Leaders and replicas per broker") -> None:
    _per_broker(brokers, path, title, [("replicas", "replicas", "#9ecae1"), ("leaders", "leaders", "#08519c")],
                "partitions")


def broker_bytes(brokers: Sequence[Mapping], path: Path) -> None:
    if all(b.get("bytes") is None for b in brokers):
        _message(path, "Bytes per broker", "sizes unknown: export taken without --log-stats")
        return
    scaled = [{**b, "megabytes": (b.get("bytes") or 0) / 1e6} for b in brokers]
    _per_broker(scaled, path, "Bytes per broker (replicas' log sizes)", [("megabytes", "MB", "#31a354")], "MB")


def _per_broker(brokers: Sequence[Mapping], path: Path, title: str, series, unit: str) -> None:
    plt = _pyplot()
    rows = sorted(brokers, key=lambda b: b["broker_id"])
    width = max(6.4, min(16, 0.35 * len(rows) + 3)) if len(rows) <= BARS_MAX else 10
    fig, ax = plt.subplots(figsize=(width, 4.2))
    if len(rows) <= BARS_MAX:
        positions = range(len(rows))
        width = 0.8 / len(series)
        for index, (key, label, color) in enumerate(series):
            offsets = [p + (index - (len(series) - 1) / 2) * width for p in positions]
            ax.bar(offsets, [r[key] or 0 for r in rows], width=width, label=label, color=color)
        ax.set_xticks(list(positions))
        ax.set_xticklabels([_broker_label(r) for r in rows], rotation=90 if len(rows) > 20 else 0, fontsize=8)
        ax.set_xlabel("broker (rack)")
    else:
        for key, label, color in series:
            values = sorted((r[key] or 0 for r in rows), reverse=True)
            ax.plot(range(len(values)), values, label=f"{label} (sorted)", color=color)
        ax.set_xlabel(f"{len(rows)} brokers, most loaded first")
    for key, label, color in series:
        mean = sum(r[key] or 0 for r in rows) / max(1, len(rows))
        ax.axhline(mean, color=color, linestyle="--", linewidth=1, label=f"mean {label} {mean:.1f}")
    ax.set_ylim(bottom=0)
    ax.set_ylabel(unit)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _broker_label(row: Mapping) -> str:
    rack = row.get("rack")
    dead = "" if row.get("alive", True) else " ✝"
    return f"{row['broker_id']}\n({rack})" if rack else f"{row['broker_id']}{dead}"


def _message(path: Path, title: str, text: str) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 2.0))
    ax.axis("off")
    ax.set_title(title)
    ax.text(0.5, 0.5, text, ha="center", va="center")
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


# Phases of a failover in time order; (column, label, colour). Detection is drawn
# hatched when it is inferred (the session timeout) rather than measured.
PHASES = (
    ("detection_ms", "detection", "#bdbdbd"),
    ("queue_ms", "queued", "#fdd0a2"),
    ("load_state_ms", "load state", "#c6dbef"),
    ("decide_ms", "decide", "#6baed6"),
    ("zookeeper_write_ms", "ZooKeeper write", "#fd8d3c"),
    ("send_requests_ms", "requests to brokers", "#74c476"),
    ("broker_tail_ms", "brokers finishing", "#238b45"),
)


def failover_timeline(failovers: Sequence[Mapping], path: Path, limit: int = 40) -> None:
    """One horizontal bar per failover, its phases stacked left to right in milliseconds."""
    plt = _pyplot()
    rows = list(failovers)[-limit:]
    if not rows:
        _message(path, "Failovers", "no failover in these traces")
        return
    fig, ax = plt.subplots(figsize=(10, max(3.0, 0.42 * len(rows) + 2.2)))
    labels = []
    longest = 0.0
    for y, row in enumerate(rows):
        left = 0.0
        for key, label, color in PHASES:
            width = row.get(key) or 0.0
            if width <= 0:
                continue
            inferred = key == "detection_ms" and row.get("detection_source") != "measured"
            ax.barh(y, width, left=left, color=color, edgecolor="#636363" if inferred else color,
                    hatch="//" if inferred else None, label=label + (" (inferred)" if inferred else ""))
            left += width
        ax.text(left, y, f" {left:,.0f} ms", va="center", fontsize=7)
        longest = max(longest, left)
        labels.append(f"{row.get('kind', '')} {row.get('partitions_affected') or 0}p\n{row.get('started_at', '')}")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds from the broker's death (detection) to the last broker's answer")
    ax.set_title("Failover timeline")
    handles, names = ax.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12),
              ncol=4, frameon=False)
    ax.set_xlim(0, longest * 1.1 if longest else 1)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def plan_balance(before: Sequence[Mapping], after: Sequence[Mapping], path: Path) -> None:
    """Replicas and preferred leaders per broker before and after a rebalance plan."""
    plt = _pyplot()
    ids = sorted({r["broker_id"] for r in before} | {r["broker_id"] for r in after})
    b = {r["broker_id"]: r for r in before}
    a = {r["broker_id"]: r for r in after}
    fig, axes = plt.subplots(1, 2, figsize=(max(8, min(16, 0.5 * len(ids) + 4)), 4))
    for ax, key, title in ((axes[0], "replicas", "Replicas per broker"),
                           (axes[1], "preferred_leaders", "Preferred leaders per broker")):
        if len(ids) <= BARS_MAX:
            positions = range(len(ids))
            ax.bar([p - 0.2 for p in positions], [b.get(i, {}).get(key, 0) for i in ids], 0.4, label="before",
                   color="#bdbdbd")
            ax.bar([p + 0.2 for p in positions], [a.get(i, {}).get(key, 0) for i in ids], 0.4, label="after",
                   color="#3182bd")
            ax.set_xticks(list(positions))
            ax.set_xticklabels([str(i) for i in ids], fontsize=8, rotation=90 if len(ids) > 20 else 0)
        else:
            for source, label, color in ((b, "before", "#bdbdbd"), (a, "after", "#3182bd")):
                ax.plot(sorted((source.get(i, {}).get(key, 0) for i in ids), reverse=True), label=label, color=color)
        ax.set_title(title)
        ax.set_xlabel("broker")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
