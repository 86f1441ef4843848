-- Schema version 5: which view and trigger are installed (check.sql): the
-- hash of their text and the fencing version that wrote them. A build whose
-- text differs reinstalls them, once; an older build never replaces a newer
-- one's. And the store-wide meta table of version 1, empty since version 2.
CREATE TABLE fencing_installed (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    hash    TEXT NOT NULL,
    version TEXT NOT NULL
);
DROP TABLE IF EXISTS fencing_meta;
