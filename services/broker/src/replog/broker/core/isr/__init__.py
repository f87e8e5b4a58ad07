"""Who is in sync, and what is committed: the leader's ISR and high-watermark rules.

- follower_progress.py caught-up, out-of-sync and rejoin rules for each follower
- high_watermark.py    HW as pure functions (candidate + epoch rule, strict min ISR)
- isr_proposal.py      AlterPartition proposals, maximal ISR, ineligible followers' back-off
- isr_answer.py        what an AlterPartition answer proves, and the leader's outcomes

Pure, like the rest of the core (tests/unit/test_core_purity.py).
"""
