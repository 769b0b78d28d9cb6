"""NG12 knowledge base: parsing the PDF into citable recommendations, rows, criteria and chunks."""
