package ceiling.aspublished;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Source 001's bank-java as its text describes it (Habr, 2018), on the contract's paths so that
 * plan 001 drives it beside the fixed stacks. Its flaws are kept on purpose (README.md lists
 * them); it is here to measure what they cost and must not be copied.
 */
@SpringBootApplication
public class Application {
    public static void main(String[] args) {
        SpringApplication.run(Application.class, args);
    }
}
