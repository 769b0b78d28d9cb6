"""Identity and access: who is calling (local accounts, OIDC, API keys) and what their role allows."""
