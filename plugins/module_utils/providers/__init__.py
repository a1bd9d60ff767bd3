"""One package per provider type; each keeps its backend SDK behind a small seam."""
