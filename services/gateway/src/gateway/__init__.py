"""NG12 gateway: the single public API (/api/v1), admin routes and the frontend."""
