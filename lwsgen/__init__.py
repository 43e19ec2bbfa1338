"""lwsgen: one model profile in, validated LeaderWorkerSet manifests out."""

__version__ = "0.1.0"
