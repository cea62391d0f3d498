"""Running and evidence: samples drawn, judged, stored, exported."""
