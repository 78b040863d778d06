-- What a run read: the bill format's name with the layout the file turned
-- out to be (`wechatpay trade bill (REFUND)`, `alipay 业务明细 (GBK)`), or
-- what a page-by-page pull asked for; NULL until it is known (a file
-- refused before its end, a run from before this column).
ALTER TABLE recon_runs ADD COLUMN bill_type TEXT NULL;
