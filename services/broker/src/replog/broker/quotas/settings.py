"""The client quotas' configuration keys (their one owner): the window each user's rate is measured over."""

from __future__ import annotations

from dataclasses import dataclass

from replog.common.config import between, setting


@dataclass(frozen=True)
class QuotaSettings:
    quota_window_num: int = setting(
        11, "samples a user's produce and fetch rates are measured over, for its client quotas (Kafka's "
            "quota.window.num); a burst is forgotten after quota_window_num samples", between(2, 1000))
    quota_window_size_seconds: int = setting(
        1, "length of one sample of the client quotas' window, in seconds (Kafka's quota.window.size.seconds)",
        between(1, 3600))
