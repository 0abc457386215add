-- Where an add-on is reached (issue 31, Kubernetes add-ons): the host name of its Service
-- (`<name>.<namespace>.svc.cluster.local`) when a cluster runs it; null: the attached sandboxes'
-- own loopback, where the local runtime forwards `port`.
ALTER TABLE addons ADD COLUMN host text;
