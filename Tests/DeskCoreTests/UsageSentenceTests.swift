import DeskCore
import Testing

/// Usage errors read like every other refusal: what was wrong, and what to type instead.
@Suite struct UsageSentenceTests {
    @Test func argumentParsersMessagesBecomeSentencesThatNameTheFix() {
        #expect(UsageSentence.rewrite("Missing expected argument '--idle <idle>'", subcommand: "reap")
                == "deskctl reap needs --idle; for example: deskctl reap --idle 2h (see deskctl reap --help).")
        #expect(UsageSentence.rewrite("Missing expected argument '<display>'", subcommand: "url")
                == "deskctl url needs a display; for example: deskctl url :3 (see deskctl url --help).")
        #expect(UsageSentence.rewrite("Missing value for '--user <user>'", subcommand: "start")
                == "--user needs a value; for example: deskctl start --user alice --desktop openbox (see deskctl start --help).")
        #expect(UsageSentence.rewrite("Unexpected argument 'frob'", subcommand: nil)
                == "'frob' is not a deskctl command; use one of desktops, history, kill, list, logs, metrics, passwd, probe, reap, show, start, status, url (see deskctl --help).")
        #expect(UsageSentence.rewrite("Unexpected argument ':3'", subcommand: "list")
                == "deskctl list takes no argument ':3'; for example: deskctl list --all (see deskctl list --help).")
        #expect(UsageSentence.rewrite("Unknown option '--frob'", subcommand: "kill")
                == "deskctl kill has no option --frob; deskctl kill --help lists the options it has.")
        // deskctl's own sentences keep their words, with the subcommand's help.
        #expect(UsageSentence.rewrite("'x' is not a geometry; write it as WIDTHxHEIGHT, for example 1920x1080.", subcommand: "start")
                == "'x' is not a geometry; write it as WIDTHxHEIGHT, for example 1920x1080. (see deskctl start --help)")
    }

    @Test func theSubcommandIsTheFirstWordThatIsOne() {
        #expect(UsageSentence.subcommand(in: ["deskctl", "--socket", "/tmp/s", "reap"]) == "reap")
        #expect(UsageSentence.subcommand(in: ["deskctl", "frob"]) == nil)
        #expect(UsageSentence.subcommand(in: ["deskctl", "start", "--desktop", "list"]) == "start")
    }
}
