-- Reconciliation reads one business day of one provider: the payments
-- paid that day (or, never paid, made that day) and the refunds finished
-- that day. Without these indexes both walked everything the provider ever
-- had (by the (provider, provider_txn_id) index, by the refunds' status
-- index), so a run took longer every day the history grew.
-- (provider, paid_at, created_at) serves both halves of the day's
-- condition: paid_at in the day, or paid_at IS NULL and created_at in it.
CREATE INDEX payments_day ON payments (provider, paid_at, created_at);
CREATE INDEX refunds_day ON refunds (provider, status, finished_at);
