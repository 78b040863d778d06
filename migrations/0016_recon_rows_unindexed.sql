-- Every read of `recon_rows` is by run (and line): its primary key. The
-- indexes by transaction, payment and refund served the first design,
-- which matched staged rows in SQL; since matching streams in memory none
-- is read, and each cost a B-tree insert per staged row (a pull stages
-- every row of its statement).
DROP INDEX recon_rows_txn;
DROP INDEX recon_rows_payment;
DROP INDEX recon_rows_refund;
