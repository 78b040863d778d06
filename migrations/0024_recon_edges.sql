-- The day's edge: payments and refunds Reckon finished within the cut
-- window of a business day's start or end, whose provider may book them in
-- the neighbouring day's statement. One row per (provider, kind, number):
-- IN_TRANSIT (missing from its own day's statement, expected in the
-- neighbour's), ARRIVED (a neighbour's statement carried it: which day and
-- run) or MISSING (the neighbour's statement came without it: a ticket is
-- open). Runs of either day, in any order, read and write these rows; a
-- run reads only its own day's and its neighbours' few rows.
CREATE TABLE recon_edges (
    provider       TEXT NOT NULL,
    kind           TEXT NOT NULL,
    number         TEXT NOT NULL,
    -- the business day Reckon's own record belongs to
    local_date     TEXT NOT NULL,
    -- the neighbouring statement day it may be booked in
    expected_date  TEXT NOT NULL,
    state          TEXT NOT NULL,
    arrived_date   TEXT NULL,
    arrived_run    TEXT NULL,
    -- the run that last changed the row
    run_id         TEXT NOT NULL,
    updated_at     BIGINT NOT NULL,
    PRIMARY KEY (provider, kind, number)
);
CREATE INDEX recon_edges_local ON recon_edges (provider, local_date);
CREATE INDEX recon_edges_expected ON recon_edges (provider, expected_date);
-- The records still in transit, for the pass that tickets those whose
-- neighbouring statement is overdue.
CREATE INDEX recon_edges_in_transit ON recon_edges (provider, expected_date) WHERE state = 'IN_TRANSIT';
