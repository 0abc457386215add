-- memberships.admin is derived from a role that is never null (0046): say so, so readers may rely on it.
ALTER TABLE memberships ALTER COLUMN admin SET NOT NULL;
