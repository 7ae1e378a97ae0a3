package symname

import "testing"

func TestDemangle(t *testing.T) {
	for _, tc := range []struct{ sym, want string }{
		{"_ZN14callsite_lines14serve_commands17ha9dccaa2872c4c17E", "callsite_lines::serve_commands"},
		{"_ZN82_$LT$std..io..Lines$LT$B$GT$$u20$as$u20$core..iter..traits..iterator..Iterator$GT$4next17h1d250bf282542e01E", "<std::io::Lines<B> as core::iter::traits::iterator::Iterator>::next"},
		{"_RNvXs8_NtNtCsjrHSEGnQ3l9_3std2io5stdioNtB5_9StdinLockNtB7_7BufRead9read_line", "<std::io::stdio::StdinLock as std::io::BufRead>::read_line"},
		{"_RNvCs1234_7mycrate4main", "mycrate::main"},
		{"_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back"},
		{"_ZN4lock6Server6handleEv", "lock::Server::handle"},
		{"_ZN5lockd6Server6handleB5cxx11Ei", "lockd::Server::handle"},
		{"handle_client", "handle_client"},
		{"main.(*server).handle", "main.(*server).handle"},
		{"_Zgarbage", "_Zgarbage"},
	} {
		if got := Demangle(tc.sym); got != tc.want {
			t.Errorf("Demangle(%q) = %q, want %q", tc.sym, got, tc.want)
		}
	}
}

func TestIsRust(t *testing.T) {
	for sym, want := range map[string]bool{
		"_ZN14callsite_lines4main17h4fee5c35f2e4e663E": true,
		"_RNvCs1234_7mycrate4main":                     true,
		"_ZN4lock6Server6handleEv":                     false, // C++
		"_ZN3foo3barE":                                 false,
		"main":                                         false,
	} {
		if got := IsRust(sym); got != want {
			t.Errorf("IsRust(%q) = %v, want %v", sym, got, want)
		}
	}
}

func TestRustLibrary(t *testing.T) {
	for path, want := range map[string]bool{
		"<std::io::Lines<B> as core::iter::traits::iterator::Iterator>::next": true,
		"std::io::read_until":                                         true,
		"core::ptr::drop_in_place<std::io::Lines>":                    true,
		"<&mut std::net::TcpStream as std::io::Read>::read":           true,
		"tokio::runtime::task::harness::Harness<T,S>::poll":           true,
		"<[u8] as alloc::borrow::ToOwned>::to_owned":                  true, // no path: the trait's
		"<I as core::iter::traits::collect::IntoIterator>::into_iter": true,
		"<T as lockd::Codec>::encode":                                 false,
		"callsite_lines::serve_commands":                              false,
		"<lockd::Conn as std::io::Read>::read":                        false,
		"lockd::main::{{closure}}":                                    false,
	} {
		if got := RustLibrary(path); got != want {
			t.Errorf("RustLibrary(%q) = %v, want %v (crate %q)", path, got, want, Crate(path))
		}
	}
}

func TestJNIMethod(t *testing.T) {
	for _, tc := range []struct {
		sym, want string
		ok        bool
	}{
		{"Java_sun_nio_ch_SocketDispatcher_read0", "sun.nio.ch.SocketDispatcher.read0", true},
		{"Java_sun_nio_ch_Net_connect0", "sun.nio.ch.Net.connect0", true},
		{"Java_java_io_FileOutputStream_writeBytes", "java.io.FileOutputStream.writeBytes", true},
		{"Java_my_1pkg_Main_run__I", "my_pkg.Main.run", true},
		{"Java_a_B_caf_000e9", "a.B.café", true},
		{"JNI_OnLoad", "", false},
		{"Java_", "", false},
	} {
		got, ok := JNIMethod(tc.sym)
		if got != tc.want || ok != tc.ok {
			t.Errorf("JNIMethod(%q) = %q, %v; want %q, %v", tc.sym, got, ok, tc.want, tc.ok)
		}
	}
}

func TestStripClone(t *testing.T) {
	for sym, want := range map[string]string{
		"read_request.constprop.0": "read_request",
		"serve.part.0.cold":        "serve",
		"handle.isra.0":            "handle",
		"main.cold":                "main", // why Go names are not given to it
		"read_request":             "read_request",
		"x.1":                      "x.1", // a static's number alone is kept
		"main.coldStart":           "main.coldStart",
		".constprop.0":             ".constprop.0",
	} {
		if got := StripClone(sym); got != want {
			t.Errorf("StripClone(%q) = %q, want %q", sym, got, want)
		}
	}
}

func TestJavaFrame(t *testing.T) {
	for _, tc := range []struct {
		s, method, file string
		line            int
		ok              bool
	}{
		{"CallSiteWorker.serve(CallSiteWorker.java:28)", "CallSiteWorker.serve", "CallSiteWorker.java", 28, true},
		{"Jvm2$Pipe.lambda$new$0(Jvm2.java:204)", "Jvm2$Pipe.lambda$new$0", "Jvm2.java", 204, true},
		{"CallSiteWorker.serve(CallSiteWorker.java)", "CallSiteWorker.serve", "CallSiteWorker.java", 0, true},
		{"a.b.C.<init>(Unknown Source)", "a.b.C.<init>", "", 0, true},
		{"libnio.so+0x72eb", "", "", 0, false},
		{"callsite_lines+0x1f2a", "", "", 0, false},
		{"main(x.java:0)", "", "", 0, false},
		{"C.m(C.java:x)", "", "", 0, false},
		{"", "", "", 0, false},
	} {
		method, file, line, ok := JavaFrame(tc.s)
		if method != tc.method || file != tc.file || line != tc.line || ok != tc.ok {
			t.Errorf("JavaFrame(%q) = %q, %q, %d, %v; want %q, %q, %d, %v", tc.s, method, file, line, ok, tc.method, tc.file, tc.line, tc.ok)
		}
	}
}
