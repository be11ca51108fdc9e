package bundle

// OCIDir is c's OCI download directory, "" for a bundle server.
func OCIDir(c *Client) string { return c.oci }
