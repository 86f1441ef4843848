-- Schema version 9 (numbered past 8, which another change of this release
-- adds): each recorded rejection names the role of the session that
-- recorded it (`session_user`), which no argument can forge, and the ring
-- finds a role's rows by it (`record_rejection`, functions.sql). Rows
-- recorded before have none.
ALTER TABLE @schema@.rejections ADD COLUMN role text;
CREATE INDEX rejections_role ON @schema@.rejections (role, id);
