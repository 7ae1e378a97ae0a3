#!/no/such/sh
echo hello
