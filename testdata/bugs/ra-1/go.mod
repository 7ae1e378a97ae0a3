module lockstep.dev/bugs/ra1

go 1.22
