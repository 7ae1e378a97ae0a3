module lockstep.dev/bugs/ra-1

go 1.22
