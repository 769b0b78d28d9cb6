"""NG12 ingestion service: turns the NG12 PDF into a knowledge base and a retrieval index."""
