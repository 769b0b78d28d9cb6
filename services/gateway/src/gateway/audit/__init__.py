"""The audit trail: one append-only, hash-chained record per clinical answer, admin action and sign-in."""
