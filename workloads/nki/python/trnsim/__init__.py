"""trnsim's Python side: the NKI frontend lives in trnsim.nki."""
