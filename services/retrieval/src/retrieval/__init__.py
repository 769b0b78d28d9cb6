"""NG12 retrieval service: owns ChromaDB and the lexical index, embeds, searches, versions indexes."""
