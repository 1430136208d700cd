"""Artifact keys for templates, built by the store's one key layout.

Argo substitutes ``{{…}}`` placeholders at run time, so a template key is the layout's
key with placeholders in place of values. The layout functions slug their inputs,
which would mangle a placeholder; :func:`placeholder_key` therefore calls the layout
function with slug-proof sentinels and swaps the placeholders in afterwards. If the
layout changes, the templates change with it (and the golden test says so).
"""

from __future__ import annotations

from typing import Callable

from pvbench.results.volume import ACCESS_MODES, VOLUME_MODES, volume_key
from pvbench.store import layout


def placeholder_key(fn: Callable[..., str], **placeholders: str) -> str:
    sentinels = {name: f"zz{index}sentinel{name.replace('_', '')}zz" for index, name in enumerate(placeholders)}
    key = fn(**sentinels)
    for name, sentinel in sentinels.items():
        if key.count(sentinel) != 1:
            raise ValueError(f"{fn.__name__} does not place {name} exactly once in its key: {key}")
        key = key.replace(sentinel, placeholders[name])
    return key


def cell_prefix(
    campaign: str, run: str, occasion: str, storage_class: str, volume: str, profile: str, workload: str, rep: str
) -> str:
    """Where one cell's result.json and fio.json go."""
    return placeholder_key(
        layout.cell_prefix,
        campaign=campaign,
        run=run,
        occasion=occasion,
        storage_class=storage_class,
        volume=volume,
        profile=profile,
        workload=workload,
        rep=rep,
    )


def volume_key_expression(volume_mode: str, access_mode: str) -> str:
    """The key's ``volume=`` value (pvbench.cells.volume.volume_key) as an Argo expression tag over
    the two expressions that hold the cell's modes: the layout's slug is lowercase, and Argo's
    simple tags cannot lowercase. Its mapping is made from volume_key itself, so the two agree."""
    shorts = {mode: volume_key(VOLUME_MODES[0], mode).split("-", 1)[1] for mode in ACCESS_MODES}
    access = " : ".join(f"{access_mode} == '{mode}' ? '{short}'" for mode, short in shorts.items()) + " : 'unknown'"
    return "{{=" + f"lower({volume_mode}) + '-' + ({access})" + "}}"


def run_results_prefix(campaign: str, run: str) -> str:
    """Prefix holding every cell result of one run."""
    return placeholder_key(layout.results_prefix, campaign=campaign, run=run)


def run_compact_prefix(campaign: str, run: str) -> str:
    """Where the run's compact tables go (its results, validated and flattened once)."""
    return placeholder_key(layout.compact_prefix, campaign=campaign, run=run)


def campaign_compacts_prefix(campaign: str) -> str:
    """Every run's compact of the campaign: what the campaign's tables are built from."""
    return placeholder_key(layout.compact_prefix, campaign=campaign)


def campaign_analytics_prefix(campaign: str) -> str:
    """Where the campaign's Parquet tables go (every run pooled, run=all)."""
    return placeholder_key(layout.analytics_prefix, campaign=campaign)


def campaign_history_key(campaign: str) -> str:
    """The copy of the campaign's occasion_history the other campaigns' aggregations read."""
    return placeholder_key(layout.history_key, campaign=campaign)


def histories_prefix() -> str:
    """Every campaign's history_key."""
    return layout.HISTORY_ROOT


def campaign_report_prefix(campaign: str) -> str:
    """Where the campaign's report site goes: beside its tables, under ``report/``."""
    return placeholder_key(layout.report_prefix, campaign=campaign)
