"""Shared library of NG12 Assessor: models, settings, logging, metrics and gRPC plumbing."""
