"""Generated gRPC stubs of the NG12 contracts (see proto/; regenerate with `make proto`)."""
