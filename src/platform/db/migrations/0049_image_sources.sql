-- Issue 34: deploys of pushed images. An image record made from an image reference (no
-- build) names it pinned by digest (`host/name@sha256:...`); pulling it from a registry the
-- operator allows may need the member's credentials, kept sealed (SecretBox), never shown.
ALTER TABLE images ADD COLUMN source_image text;
ALTER TABLE images ADD COLUMN source_credentials text;
