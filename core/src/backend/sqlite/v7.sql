-- Schema version 7: the file the store lives in (docs/semantics.md, "SQLite
-- file identity"). One row: a random id for the store, the identity of the
-- file it was last written in (st_dev, st_ino; recorded by the open that
-- creates or upgrades the file, and by the step that finds it moved), and
-- the number of the latest library write transaction, which the sidecar
-- beside the file records too. A file behind its sidecar, in another file
-- or beside another store's sidecar is a restored or copied history.
CREATE TABLE fencing_file (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    store_id BLOB NOT NULL,
    dev      INTEGER,
    ino      INTEGER,
    gen      INTEGER NOT NULL DEFAULT 0
);
INSERT INTO fencing_file (id, store_id) VALUES (1, randomblob(16));
