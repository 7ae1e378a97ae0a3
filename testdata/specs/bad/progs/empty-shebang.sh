#!
echo hello
