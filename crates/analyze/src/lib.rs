//! Pure analysis of recorded runs: shelves, validity, RPS@p99<=SLO, search statistics
