-- The ticket list's counts per status and per class, and its filters,
-- answered from indexes at 100,000 tickets (see BENCHMARKS.md).
CREATE INDEX discrepancies_class_status ON discrepancies (class, status);
CREATE INDEX discrepancies_status_class ON discrepancies (status, class);
